/* The singleton backend: a group of one. group.c answers every collective
 * of a size-1 group itself (an identity copy), so only teardown is here. */
#include "core/group.h"

static void single_destroy(dc_group *g) { (void)g; }

const dc_backend_ops dc_single_ops = {
    .name = "singleton",
    .destroy = single_destroy,
};
