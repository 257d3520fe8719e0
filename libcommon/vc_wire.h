/*
 * The messages between the broker (vc-php's main process) and its workers,
 * each over its own link (libcommon/vc_link.h), as lists of frames. A
 * front a worker is lent to speaks the broker's part itself (the front-id
 * then means nothing), with vc-front's backend.c including this file.
 *
 * broker -> worker:  [front-id][FrontMessage][body...]   a request
 *                    ["C"]                               the client left
 * worker -> broker:  ["R"]                               ready for work
 *                    [flag][front-id][BackMessage][body...]
 *                      flag "P": part of a response, more follows
 *                      flag "F": the response is complete, still busy
 *                      flag "D": the response is complete, and ready
 *
 * "F" exists for fastcgi_finish_request(): the client has its answer but
 * the worker keeps running the script, so it must not get new work yet.
 */
#ifndef VC_PHP_WIRE_H
#define VC_PHP_WIRE_H

#define WIRE_READY 'R'
#define WIRE_PART 'P'
#define WIRE_FINAL 'F'
#define WIRE_DONE 'D'
#define WIRE_CANCEL 'C'

#endif
