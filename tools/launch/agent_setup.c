#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "agent_setup.h"

#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "util.h"
#include "wire.h"

static int add_word(char ***v, size_t *n, char *s) {
  char **grown = realloc(*v, (*n + 2) * sizeof *grown);
  if (grown == NULL)
    return -1;
  *v = grown;
  grown[(*n)++] = s;
  grown[*n] = NULL;
  return 0;
}

static int add_rank(struct dcl_agent_setup *s, const char *text) {
  long rank;
  if (dcl_parse_long(text, 0, INT_MAX, &rank) != 0)
    return -1;
  int *grown = realloc(s->ranks, (s->n_ranks + 1) * sizeof *grown);
  if (grown == NULL)
    return -1;
  s->ranks = grown;
  s->ranks[s->n_ranks++] = (int)rank;
  return 0;
}

/* Frames whose payload stays in the setup: single values, variables, the
 * command's words. Returns 0, -1 (no memory), or 1 for any other type. */
static int keep(struct dcl_agent_setup *s, int type, char *p) {
  static const char single[DCL_S_N] = {
      DCL_W_JOB,     DCL_W_TOKEN, DCL_W_HOSTFILE,    DCL_W_CWD,
      DCL_W_CWD_TRY, DCL_W_HOST,  DCL_W_MASTER_ADDR, DCL_W_MASTER_PORT};
  const char *k = type > 0 ? memchr(single, type, sizeof single) : NULL;
  if (k != NULL) {
    free(s->strs[k - single]);
    s->strs[k - single] = p;
    return 0;
  }
  if (type == DCL_W_ENV)
    return add_word((char ***)&s->opts.envs, &s->opts.n_envs, p);
  if (type == DCL_W_ARG)
    return add_word(&s->argv, &s->argc, p);
  return 1;
}

int dcl_setup_take(struct dcl_agent_setup *s, const struct dcl_frame *f) {
  char *p = strndup((const char *)f->payload, f->len);
  if (p == NULL)
    return -1;
  int rc = keep(s, f->type, p);
  if (rc <= 0) {
    if (rc < 0)
      free(p);
    return rc;
  }
  if (f->type == DCL_W_RANK)
    rc = add_rank(s, p);
  else if (f->type == DCL_W_SIZE)
    rc = dcl_parse_long(p, 1, LONG_MAX, &s->opts.nranks);
  else if (f->type == DCL_W_BEAT)
    rc = dcl_parse_long(p, 1, 3600000, &s->beat_ms);
  else if (f->type == DCL_W_VERBOSE)
    rc = 0, s->opts.verbose = dcl_verbose = true;
  else if (f->type == DCL_W_MLX)
    rc = 0, s->opts.mlx = true;
  else if (f->type == DCL_W_BIND)
    rc = 0, s->opts.bind_core = true;
  else
    rc = f->type == DCL_W_GO ? 1 : -1;
  free(p);
  return rc;
}

void dcl_setup_free(struct dcl_agent_setup *s) {
  for (size_t i = 0; i < DCL_S_N; i++)
    free(s->strs[i]);
  for (size_t i = 0; i < s->opts.n_envs; i++)
    free((char *)s->opts.envs[i]);
  free(s->opts.envs);
  for (size_t i = 0; i < s->argc; i++)
    free(s->argv[i]);
  free(s->argv);
  free(s->ranks);
  memset(s, 0, sizeof *s);
}
