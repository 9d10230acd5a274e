/* MLX's JACCL device matrix (MLX_IBV_DEVICES), src/config/devices.c.
 *
 * An N x N JSON matrix, one row per rank: entry [r][q] names the device of
 * rank r that reaches rank q — null on the diagonal (and, for a ring of
 * cables, between ranks that are not neighbours), a name, or a list of
 * names (parallel links of that pair):
 *   [[null, "rdma_en5", "rdma_en4"], ["rdma_en5", null, "en3"], ...]
 * On Linux each name is a network interface; MLX's "rdma_" prefix is
 * dropped, so MLX's files work as written. MLX_IBV_DEVICES is the path of
 * the file; distcomm also takes the JSON itself (a value starting with '['),
 * which is how its launcher passes the matrix to remote ranks. */
#ifndef DC_CONFIG_DEVICES_H
#define DC_CONFIG_DEVICES_H

#include <stddef.h>

#include "distcomm.h"

#define DC_DEVICE_NAME 16 /* IFNAMSIZ */

typedef struct dc_devices {
  int n;     /* ranks (rows) */
  int links; /* the longest list: links per pair; shorter lists repeat */
  /* n * n * links names, "" where the matrix has null:
   * [(r * n + q) * links + k] is rank r's link k to rank q. */
  char (*name)[DC_DEVICE_NAME];
} dc_devices;

/* Parse MLX_IBV_DEVICES's value (a path, or JSON text). DC_ERR_CONFIG with a
 * line naming the entry ("MLX_IBV_DEVICES /x/d.json: row 1 has 2 entries,
 * expected 3"); DC_ERR_UNAVAILABLE when libcjson cannot be loaded. */
dc_status dc_devices_load(const char *value, dc_devices *out, char *err,
                          size_t errlen);

/* Rank r's link k towards q ("" when the matrix says null). */
static inline const char *dc_device(const dc_devices *d, int r, int q, int k) {
  return d->name[((size_t)r * (size_t)d->n + (size_t)q) * (size_t)d->links +
                 (size_t)k];
}

void dc_devices_free(dc_devices *d);

#endif
