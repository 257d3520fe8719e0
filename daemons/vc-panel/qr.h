/* qr: a QR code (libqrencode) drawn as SVG by the panel itself, so an
 * enrolment's secret never leaves the machine for a QR service. */
#ifndef VC_PANEL_QR_H
#define VC_PANEL_QR_H

/* The SVG of text (malloc'd), or NULL if it does not fit a QR code. */
char *qr_svg(const char *text);

#endif
