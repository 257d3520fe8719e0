/* What libnats's threads hand the daemon's loop (mesh.h). */
#include "mesh.h"
#include "vc_util.h"

#include <stdlib.h>
#include <sys/eventfd.h>
#include <unistd.h>

int inbox_init(inbox_t *ib)
{
    pthread_mutex_init(&ib->lock, NULL);
    ib->head = NULL;
    ib->tail = &ib->head;
    ib->fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    return ib->fd < 0 ? -1 : 0;
}

void inbox_push(inbox_t *ib, inbox_kind_t kind, natsMsg *msg)
{
    inbox_item_t *it = vc_malloc(sizeof(*it));
    *it = (inbox_item_t){NULL, kind, msg};
    pthread_mutex_lock(&ib->lock);
    int was_empty = ib->head == NULL;
    *ib->tail = it;
    ib->tail = &it->next;
    pthread_mutex_unlock(&ib->lock);
    if (was_empty) {
        uint64_t one = 1;
        (void)!write(ib->fd, &one, sizeof(one));
    }
}

inbox_item_t *inbox_take(inbox_t *ib)
{
    uint64_t n;
    (void)!read(ib->fd, &n, sizeof(n));
    pthread_mutex_lock(&ib->lock);
    inbox_item_t *all = ib->head;
    ib->head = NULL;
    ib->tail = &ib->head;
    pthread_mutex_unlock(&ib->lock);
    return all;
}

void inbox_fini(inbox_t *ib)
{
    for (inbox_item_t *it = inbox_take(ib), *next; it; it = next) {
        next = it->next;
        if (it->msg)
            natsMsg_Destroy(it->msg);
        free(it);
    }
    close(ib->fd);
    pthread_mutex_destroy(&ib->lock);
}
