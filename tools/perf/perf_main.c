/* distcomm-perf - collective benchmark in the style of nccl-tests'
 * all_reduce_perf.
 *
 * Every rank runs the same loop over sizes; rank 0 prints one row per size.
 * Run it through the launcher for several ranks:
 *   distcomm-launch -n 2 -- distcomm-perf -t all -b 8 -e 128M
 * Exit status: 0 ok, 1 library error or wrong results, 2 bad options. */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "perf.h"

static const char *const op_names[PERF_OP_COUNT] = {
    "all_reduce", "all_gather", "reduce_scatter", "broadcast", "sendrecv",
    "all_to_all", "gather",     "scatter",        "reduce",    "iall_reduce"};

const char *perf_op_name(perf_op op) { return op_names[op]; }

void perf_fail(const perf_ctx *c, dc_status st, const char *what) {
  const char *detail = dc_group_last_error(c->g);
  fprintf(stderr, "distcomm-perf: rank %d: %s: %s%s%s%s\n", c->rank, what,
          dc_strerror(st), *detail ? " (" : "", detail, *detail ? ")" : "");
  exit(1);
}

static void usage(FILE *f) {
  fputs(
      "usage: distcomm-launch -n N -- distcomm-perf [options]\n"
      "Times collectives across the ranks the launcher starts (alone it is "
      "a group\n"
      "of one, and says so). Columns as nccl-tests: size count type redop "
      "time\n"
      "algbw busbw #wrong.\n"
      "  -t, --op LIST          "
      "all_reduce|all_gather|reduce_scatter|broadcast|sendrecv|\n"
      "                         all_to_all|gather|scatter|reduce|iall_reduce,\n"
      "                         comma-separated, or all (default all_reduce);\n"
      "                         iall_reduce: dc_iall_reduce + dc_wait per "
      "call\n"
      "  -b, --minbytes N       smallest size (default 8; suffixes K, M, G)\n"
      "  -e, --maxbytes N       largest size (default 128M)\n"
      "  -f, --stepfactor F     size multiplication factor (default 2)\n"
      "  -l, --sizes LIST       explicit sizes instead of -b/-e/-f, e.g. "
      "8,1K,64K,1M\n"
      "  -n, --iters N          timed iterations per run (default: by size, "
      "2000 up\n"
      "                         to 1K ... 3 above 16M, the schedule of the "
      "MPI and\n"
      "                         Gloo runs bench/peers/compare sets beside it)\n"
      "  -w, --warmup_iters N   untimed iterations per size (default: as -n)\n"
      "  -R, --runs N           timed runs per size, the median is reported "
      "(default 1)\n"
      "  -d, --datatype NAME    one of the 14 dtypes (default float32)\n"
      "  -o, --redop NAME       sum|max|min|prod (default sum)\n"
      "  -r, --root N           root of broadcast/gather/scatter/reduce "
      "(default 0)\n"
      "  -c, --check 0|1        patterned data, one verified call per size "
      "(default 1)\n"
      "  -p, --per-rank 0|1     also print every rank's own time (default 0)\n"
      "  -P, --peers-format     print the columns bench/peers/compare reads "
      "(op "
      "bytes iters\n"
      "                         time_us algbw_GB/s busbw_GB/s check), as "
      "its MPI\n"
      "                         and Gloo runs print them\n"
      "  -h, --help\n"
      "Sizes as nccl-tests: all_gather and gather = gathered output bytes,\n"
      "reduce_scatter and scatter = input bytes, all_to_all = each rank's send "
      "bytes,\n"
      "sendrecv = message bytes with time one way (ping-pong of ranks 0, 1).\n"
      "time = median over runs of the slowest rank's time per call.\n",
      f);
}

/* One-line complaint about an option, then exit status 2. */
static int bad(const char *opt, const char *val, const char *want) {
  fprintf(stderr, "distcomm-perf: bad %s '%s' (%s); see --help\n", opt, val,
          want);
  return 2;
}

/* ---- value parsers: 0 on success ----------------------------------------- */

static int suffix_shift(const char *s, unsigned *shift) {
  switch (*s) {
  case '\0':
    *shift = 0;
    return 0;
  case 'k':
  case 'K':
    *shift = 10;
    break;
  case 'm':
  case 'M':
    *shift = 20;
    break;
  case 'g':
  case 'G':
    *shift = 30;
    break;
  case 'b':
  case 'B':
    *shift = 0;
    return s[1] != '\0';
  default:
    return -1;
  }
  s++; /* accept K, KB, KiB */
  return strcmp(s, "") && strcmp(s, "B") && strcmp(s, "iB") ? -1 : 0;
}

static int parse_bytes(const char *s, size_t *out) {
  char *end;
  unsigned shift;
  if (*s < '0' || *s > '9')
    return -1;
  errno = 0;
  unsigned long long v = strtoull(s, &end, 10);
  if (errno || suffix_shift(end, &shift) || v == 0)
    return -1;
  if (v > (unsigned long long)(SIZE_MAX >> shift))
    return -1;
  *out = (size_t)(v << shift);
  return 0;
}

static int parse_int(const char *s, int lo, int hi, int *out) {
  char *end;
  errno = 0;
  long v = strtol(s, &end, 10);
  if (errno || end == s || *end || v < lo || v > hi)
    return -1;
  *out = (int)v;
  return 0;
}

static int parse_dtype(const char *s, dc_dtype *out) {
  for (int t = 0; t < DC_DTYPE_COUNT; t++)
    if (!strcmp(s, dc_dtype_name((dc_dtype)t)))
      return *out = (dc_dtype)t, 0;
  return -1;
}

static int parse_redop(const char *s, dc_op *out) {
  for (int op = 0; op < DC_OP_COUNT; op++)
    if (!strcmp(s, dc_op_name((dc_op)op)))
      return *out = (dc_op)op, 0;
  return -1;
}

static int parse_one_op(const char *s, unsigned *mask) {
  if (!strcmp(s, "all"))
    return *mask = (1u << PERF_OP_COUNT) - 1, 0;
  for (int op = 0; op < PERF_OP_COUNT; op++)
    if (!strcmp(s, op_names[op]))
      return *mask |= 1u << op, 0;
  return -1;
}

static int parse_ops(const char *list, unsigned *mask) {
  char buf[256], *save = NULL;
  if (strlen(list) >= sizeof buf)
    return -1;
  strcpy(buf, list);
  *mask = 0;
  for (char *s = strtok_r(buf, ",", &save); s; s = strtok_r(NULL, ",", &save))
    if (parse_one_op(s, mask))
      return -1;
  return *mask ? 0 : -1;
}

static int cmp_size(const void *a, const void *b) {
  size_t x = *(const size_t *)a, y = *(const size_t *)b;
  return (x > y) - (x < y);
}

static int parse_size_list(const char *list, perf_opts *o) {
  char buf[1024], *save = NULL;
  if (strlen(list) >= sizeof buf)
    return -1;
  strcpy(buf, list);
  o->nsizes = 0;
  for (char *s = strtok_r(buf, ",", &save); s; s = strtok_r(NULL, ",", &save))
    if (o->nsizes == PERF_MAX_SIZES || parse_bytes(s, &o->sizes[o->nsizes++]))
      return -1;
  qsort(o->sizes, o->nsizes, sizeof o->sizes[0], cmp_size);
  return o->nsizes ? 0 : -1;
}

/* min, min*f, min*f^2, ... up to max; each step grows by at least a byte. */
static int geometric_sizes(perf_opts *o, size_t lo, size_t hi, double f) {
  o->nsizes = 0;
  for (size_t s = lo; s <= hi;) {
    if (o->nsizes == PERF_MAX_SIZES)
      return -1;
    o->sizes[o->nsizes++] = s;
    double next = (double)s * f;
    if (next >= (double)SIZE_MAX)
      break;
    s = (size_t)next > s ? (size_t)next : s + 1;
  }
  return 0;
}

/* ---- the command line ------------------------------------------------------
 */

typedef struct range_args {
  size_t lo, hi;
  double factor;
  const char *list;
} range_args;

static const struct option long_opts[] = {
    {"op", required_argument, NULL, 't'},
    {"minbytes", required_argument, NULL, 'b'},
    {"maxbytes", required_argument, NULL, 'e'},
    {"stepfactor", required_argument, NULL, 'f'},
    {"sizes", required_argument, NULL, 'l'},
    {"iters", required_argument, NULL, 'n'},
    {"warmup_iters", required_argument, NULL, 'w'},
    {"runs", required_argument, NULL, 'R'},
    {"datatype", required_argument, NULL, 'd'},
    {"redop", required_argument, NULL, 'o'},
    {"root", required_argument, NULL, 'r'},
    {"check", required_argument, NULL, 'c'},
    {"per-rank", required_argument, NULL, 'p'},
    {"peers-format", no_argument, NULL, 'P'},
    {"help", no_argument, NULL, 'h'},
    {NULL, 0, NULL, 0},
};

static int parse_factor(const char *s, double *f) {
  char *end;
  *f = strtod(s, &end);
  return end == s || *end || !(*f > 1.0 && *f < 1e6) ? -1 : 0;
}

/* Applies one option; returns 0, or an exit status (2 bad, 3 = help). */
static int apply(int ch, const char *arg, perf_opts *o, range_args *ra) {
  switch (ch) {
  case 't':
    return parse_ops(arg, &o->ops) ? bad("-t", arg, "op name, list or all") : 0;
  case 'b':
    return parse_bytes(arg, &ra->lo) ? bad("-b", arg, "bytes, e.g. 8, 64K") : 0;
  case 'e':
    return parse_bytes(arg, &ra->hi) ? bad("-e", arg, "bytes, e.g. 1M, 1G") : 0;
  case 'f':
    return parse_factor(arg, &ra->factor) ? bad("-f", arg, "a factor > 1") : 0;
  case 'l':
    ra->list = arg;
    return 0;
  case 'n':
    return parse_int(arg, 1, 100000000, &o->iters)
               ? bad("-n", arg, "count >= 1")
               : 0;
  case 'w':
    return parse_int(arg, 0, 100000000, &o->warmup)
               ? bad("-w", arg, "count >= 0")
               : 0;
  case 'R':
    return parse_int(arg, 1, 1000, &o->runs) ? bad("-R", arg, "1..1000") : 0;
  case 'd':
    return parse_dtype(arg, &o->dtype)
               ? bad("-d", arg, "dtype name, e.g. float32")
               : 0;
  case 'o':
    return parse_redop(arg, &o->redop) ? bad("-o", arg, "sum|max|min|prod") : 0;
  case 'r':
    return parse_int(arg, 0, 1 << 30, &o->root) ? bad("-r", arg, "rank >= 0")
                                                : 0;
  case 'c':
    return parse_int(arg, 0, 1, &o->check) ? bad("-c", arg, "0 or 1") : 0;
  case 'p':
    return parse_int(arg, 0, 1, &o->per_rank) ? bad("-p", arg, "0 or 1") : 0;
  case 'P':
    o->peers_format = 1;
    return 0;
  case 'h':
    usage(stdout);
    return 3;
  default:
    return 2; /* getopt has already said what is wrong */
  }
}

static int finish_sizes(perf_opts *o, const range_args *ra) {
  if (ra->list)
    return parse_size_list(ra->list, o)
               ? bad("-l", ra->list, "up to 128 sizes, e.g. 8,1K,1M")
               : 0;
  if (ra->lo > ra->hi) {
    fprintf(stderr, "distcomm-perf: -b %zu is larger than -e %zu\n", ra->lo,
            ra->hi);
    return 2;
  }
  if (geometric_sizes(o, ra->lo, ra->hi, ra->factor)) {
    fprintf(stderr, "distcomm-perf: more than %d sizes; raise -f\n",
            PERF_MAX_SIZES);
    return 2;
  }
  return 0;
}

/* Returns -1 to go on, or the exit status (0 after --help, 2 on an error). */
static int parse_opts(int argc, char **argv, perf_opts *o) {
  *o = (perf_opts){.ops = 1u << PERF_ALL_REDUCE,
                   .warmup = -1,
                   .runs = 1,
                   .dtype = DC_FLOAT32,
                   .redop = DC_SUM,
                   .check = 1};
  range_args ra = {8, (size_t)128 << 20, 2.0, NULL};
  int ch;
  opterr = 0; /* our own one line, then the hint, as the other tools */
  while ((ch = getopt_long(argc, argv, "t:b:e:f:l:n:w:R:d:o:r:c:p:Ph",
                           long_opts, NULL)) != -1) {
    if (ch == '?') {
      fprintf(stderr,
              "distcomm-perf: unknown option, or one without its value: '%s'\n"
              "Try 'distcomm-perf --help' for more information.\n",
              argv[optind - 1]);
      return 2;
    }
    int rc = apply(ch, optarg, o, &ra);
    if (rc)
      return rc == 3 ? 0 : rc;
  }
  if (optind < argc) {
    fprintf(stderr, "distcomm-perf: unexpected argument '%s'; see --help\n",
            argv[optind]);
    return 2;
  }
  int rc = finish_sizes(o, &ra);
  return rc ? rc : -1;
}

/* ---- set-up ----------------------------------------------------------------
 */

/* The largest buffer any selected op needs at any selected size. */
static size_t buffer_bytes(const perf_ctx *c) {
  size_t cap = 0, esz = dc_dtype_size(c->o->dtype);
  for (int op = 0; op < PERF_OP_COUNT; op++) {
    if (!(c->o->ops & (1u << op)))
      continue;
    for (size_t k = 0; k < c->o->nsizes; k++) {
      perf_shape sh = perf_shape_for((perf_op)op, c->o->sizes[k], c->size, esz);
      if (sh.sbytes > cap)
        cap = sh.sbytes;
      if (sh.rbytes > cap)
        cap = sh.rbytes;
    }
  }
  return cap;
}

/* Page-aligned, so no size gets an unlucky alignment the others do not. */
static void *alloc_pages(const perf_ctx *c, size_t bytes) {
  size_t rounded = (bytes + 4095) / 4096 * 4096;
  void *p = aligned_alloc(4096, rounded);
  if (!p)
    perf_fail(c, DC_ERR_NOMEM, "buffer allocation");
  return p;
}

static int init_ctx(perf_ctx *c, const perf_opts *o) {
  dc_status st = dc_init("any", 0, &c->g);
  if (st != DC_OK) {
    fprintf(stderr, "distcomm-perf: init: %s (%s)\n", dc_strerror(st),
            dc_last_error());
    return 1;
  }
  c->o = o;
  c->rank = dc_group_rank(c->g);
  c->size = dc_group_size(c->g);
  if (c->size == 1) /* a common slip: run alone, it measures memcpy */
    fputs("distcomm-perf: a group of one (started without a launcher): "
          "nothing crosses a link and busbw is 0; start the ranks with "
          "distcomm-launch -n 2 -- distcomm-perf [options]\n",
          stderr);
  if (o->root >= c->size) {
    fprintf(stderr, "distcomm-perf: -r %d: no such rank (%d ranks)\n", o->root,
            c->size);
    return 2;
  }
  c->cap = buffer_bytes(c);
  c->sb = alloc_pages(c, c->cap);
  c->rb = alloc_pages(c, c->cap);
  return 0;
}

int main(int argc, char **argv) {
  perf_opts o;
  perf_ctx c = {0};
  int rc = parse_opts(argc, argv, &o);
  if (rc >= 0)
    return rc;
  rc = init_ctx(&c, &o);
  if (rc) {
    dc_group_free(c.g);
    return rc;
  }
  perf_print_banner(&c);
  for (int op = 0; op < PERF_OP_COUNT; op++)
    if (o.ops & (1u << op))
      perf_run_op(&c, (perf_op)op);
  perf_print_summary(&c);
  free(c.sb);
  free(c.rb);
  dc_group_free(c.g);
  return c.wrong ? 1 : 0;
}
