/* dc_init: pick a backend from the environment, keep one world group. */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "core/group.h"

static pthread_mutex_t world_lock = PTHREAD_MUTEX_INITIALIZER;
static dc_group *world;

static dc_status make_world(const char *backend, int strict, dc_group **out) {
  int any = strcmp(backend, "any") == 0;
  if (!any && strcmp(backend, "ring") != 0)
    return dc_init_fail(DC_ERR_UNAVAILABLE,
                        "init: backend \"%s\" is not available (this build "
                        "has: any, ring)",
                        backend);
  dc_status st = dc_ring_init(out);
  if (st != DC_ERR_UNAVAILABLE || strict)
    return st;
  /* Nothing configured and not strict: a group of one, like MLX. */
  *out = dc_group_new(&dc_single_ops, NULL, 0, 1, 0);
  return *out ? DC_OK : dc_init_fail(DC_ERR_NOMEM, "init: out of memory");
}

dc_status dc_init(const char *backend, int strict, dc_group **group) {
  if (!group)
    return dc_init_fail(DC_ERR_INVALID, "init: group is NULL");
  *group = NULL;
  pthread_mutex_lock(&world_lock);
  dc_status st = DC_OK;
  if (!world) {
    st = make_world(backend ? backend : "any", strict, &world);
    if (st == DC_OK)
      world->is_world = 1; /* dc_group_new gave it our one reference */
  } else {
    world->refs++;
  }
  if (st == DC_OK)
    *group = world;
  pthread_mutex_unlock(&world_lock);
  return st;
}

void dc_group_free(dc_group *g) {
  if (!g)
    return;
  if (g->is_world) {
    pthread_mutex_lock(&world_lock);
    int last = --g->refs == 0;
    if (last)
      world = NULL;
    pthread_mutex_unlock(&world_lock);
    if (!last)
      return;
  }
  g->ops->destroy(g);
  free(g);
}
