/* Run-time access to Debian's libcjson (src/config/cjson_load.c).
 *
 * The library links only libc, so libcjson.so.1 is opened with dlopen the
 * first time JSON is needed and kept loaded for the life of the process.
 * Only the parser and cJSON_Delete are looked up: the cJSON struct layout
 * comes from <cjson/cJSON.h>, so walking child/next/type/valuestring needs
 * no other symbol. Any JSON the library reads (MLX_HOSTFILE, the mesh device
 * matrix) goes through here. */
#ifndef DC_CONFIG_CJSON_LOAD_H
#define DC_CONFIG_CJSON_LOAD_H

#include <stddef.h>

#include <cjson/cJSON.h>

#include "distcomm.h"

/* Parse len bytes of JSON (need not be NUL-terminated; never read past
 * len). The whole text must be one JSON value; only whitespace may follow.
 * what names the text in messages ("MLX_HOSTFILE /tmp/h.json"):
 *   DC_ERR_CONFIG:      "<what>: not valid JSON (line L, column C)",
 *                       "<what>: unexpected text after the JSON value (...)",
 *                       "<what>: is empty (expected JSON)";
 *   DC_ERR_UNAVAILABLE: "parsing <what> needs libcjson1 (apt-get install
 *                       libcjson1): <dlerror>".
 * On success free *out with dc_json_delete(). */
dc_status dc_json_parse(const char *what, const char *text, size_t len,
                        cJSON **out, char *err, size_t errlen);

/* Free a tree from dc_json_parse(); NULL is a no-op. */
void dc_json_delete(cJSON *json);

/* Tests only: the soname to dlopen instead of "libcjson.so.1". Takes effect
 * only before the first parse in the process (the library is loaded once). */
void dc_json_set_soname_for_tests(const char *soname);

#endif
