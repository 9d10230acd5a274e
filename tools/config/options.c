#include "options.h"

#include <cjson/cJSON.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char usage[] =
    "usage: " DCC_PROG
    " --hosts h1,h2,... [--over direct|ethernet] [--backend ring|mesh]\n"
    "                       [--output FILE] [--dot] [--auto-setup] [--env K=V] "
    "[--verbose]\n"
    "Finds how the hosts are linked and writes the hostfile for "
    "distcomm-launch\n"
    "(mlx.distributed_config for Linux). It ssh-es to every host and reads "
    "its\n"
    "interfaces (`ip -j addr`).\n"
    "  --hosts LIST          comma-separated ssh destinations, in rank order\n"
    "                        (default 127.0.0.1)\n"
    "  --hostfile FILE       take the hosts from an MLX hostfile's \"ssh\" "
    "entries\n"
    "  --ignore-unreachable  leave out the hosts ssh cannot reach (a warning "
    "names\n"
    "                        them) instead of stopping\n"
    "  --over direct         point-to-point cables between hosts (the default; "
    "MLX's\n"
    "                        \"thunderbolt\" is accepted): each host pings "
    "ff02::1 out of\n"
    "                        every up interface but lo and the one ssh came in "
    "on;\n"
    "                        a link counts when both ends answer each other\n"
    "  --over ethernet       one network reaches every host: each host's "
    "address is\n"
    "                        the one ssh reached it at\n"
    "  --backend ring        the links must form a ring through every host "
    "(several\n"
    "                        rings when neighbours have parallel links) "
    "(default)\n"
    "  --backend mesh        every pair of hosts must be linked (MLX's "
    "\"jaccl\")\n"
    "                        (MLX's \"jaccl-ring\" is written as the ring: its "
    "ips\n"
    "                        are the links' ends)\n"
    "  --output FILE         write the hostfile to FILE (also "
    "--output-hostfile);\n"
    "                        default: print it\n"
    "  --dot                 print the hosts and links as a Graphviz graph and "
    "exit\n"
    "                        (`| dot -Tpng > links.png`)\n"
    "  --auto-setup          give unaddressed direct links a /30 each over "
    "ssh\n"
    "                        (192.168.k.1 and .2; root or passwordless sudo); "
    "without\n"
    "                        it the commands are printed and nothing is "
    "written\n"
    "  --no-auto-setup       print those commands (the default)\n"
    "  --env K=V             add K=V to the hostfile's \"envs\": "
    "distcomm-launch sets\n"
    "                        it in every rank (repeatable)\n"
    "  --verbose             log every command and the host it runs on\n"
    "A missing link is reported as \"no direct link between A and B\" (exit "
    "1).\n"
    "Environment: DISTCOMM_SSH  the ssh command (default \"ssh\", split on "
    "spaces);\n"
    "             -o BatchMode=yes -o ConnectTimeout=5 are always added.\n";

/* One line naming the problem, and where to look. */
static int bad(const char *msg, const char *arg) {
  fprintf(stderr,
          DCC_PROG ": %s%s%s\nTry '" DCC_PROG
                   " --help' for more information.\n",
          msg, arg ? ": " : "", arg ? arg : "");
  return -1;
}

static int add_env(struct dcc_options *o, char *kv) {
  const char *eq = strchr(kv, '=');
  if (eq == NULL || eq == kv ||
      strspn(kv, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
                 "0123456789_") != (size_t)(eq - kv) ||
      (*kv >= '0' && *kv <= '9'))
    return bad("--env takes K=V (K: letters, digits and '_')", kv);
  if (o->nenvs == DCC_MAX_ENVS)
    return bad("too many --env (the most is 64)", NULL);
  o->envs[o->nenvs++] = kv;
  return 0;
}

static int add_host(struct dcc_options *o, char *h) {
  if (*h == '\0' || *h == '-' || strchr(h, ' '))
    return bad("not a host name", h);
  for (int i = 0; i < o->nhosts; i++)
    if (strcmp(o->hosts[i], h) == 0)
      return bad("host listed twice", h);
  if (o->nhosts == DCC_MAX_HOSTS)
    return bad("too many hosts (the most is 16)", NULL);
  o->hosts[o->nhosts++] = h;
  return 0;
}

static int parse_hostlist(struct dcc_options *o, char *list) {
  o->nhosts = 0;
  for (char *save, *h = strtok_r(list, ",", &save); h;
       h = strtok_r(NULL, ",", &save))
    if (add_host(o, h) != 0)
      return -1;
  return o->nhosts ? 0 : bad("--hosts is empty", NULL);
}

static char *slurp(const char *path) {
  FILE *f = fopen(path, "r");
  if (f == NULL)
    return NULL;
  char *buf = malloc(1 << 20);
  size_t n = buf ? fread(buf, 1, (1 << 20) - 1, f) : 0;
  fclose(f);
  if (buf)
    buf[n] = '\0';
  return buf;
}

/* MLX's hostfiles: a list of {"ssh", ...}, or {"hosts": [that list]}. */
static int parse_hostfile(struct dcc_options *o, const char *path) {
  static char names[DCC_MAX_HOSTS + 1][256];
  char *text = slurp(path);
  cJSON *root = text ? cJSON_Parse(text) : NULL;
  free(text);
  const cJSON *list = cJSON_IsObject(root) ? cJSON_GetObjectItem(root, "hosts")
                                           : root,
              *e;
  int n = 0, rc = cJSON_IsArray(list) && cJSON_GetArraySize(list) > 0 ? 0 : -1;
  cJSON_ArrayForEach(e, list) {
    const char *ssh = cJSON_GetStringValue(cJSON_GetObjectItem(e, "ssh"));
    if (ssh == NULL || n > DCC_MAX_HOSTS) {
      rc = -1;
      break;
    }
    snprintf(names[n++], sizeof names[0], "%s", ssh);
  }
  cJSON_Delete(root);
  if (rc != 0)
    return bad("cannot read the hosts (a list of {\"ssh\": ...}) from", path);
  o->nhosts = 0;
  for (int i = 0; i < n; i++)
    if (add_host(o, names[i]) != 0) /* names a duplicate, or too many */
      return -1;
  return 0;
}

static int set_choice(const char *opt, const char *v, const char *a,
                      const char *a2, const char *b, bool *is_b) {
  if (strcmp(v, a) == 0 || (a2 && strcmp(v, a2) == 0))
    *is_b = false;
  else if (strcmp(v, b) == 0)
    *is_b = true;
  else
    return bad(opt, v);
  return 0;
}

static const struct option longopts[] = {
    {"hosts", required_argument, NULL, 'H'},
    {"hostfile", required_argument, NULL, 'f'},
    {"over", required_argument, NULL, 'O'},
    {"backend", required_argument, NULL, 'b'},
    {"output", required_argument, NULL, 'o'},
    {"output-hostfile", required_argument, NULL, 'o'},
    {"dot", no_argument, NULL, 'd'},
    {"auto-setup", no_argument, NULL, 'a'},
    {"verbose", no_argument, NULL, 'v'},
    {"help", no_argument, NULL, 'h'},
    {"no-auto-setup", no_argument, NULL, 'A'},
    {"env", required_argument, NULL, 'e'},
    {"ignore-unreachable", no_argument, NULL, 'i'},
    {NULL, 0, NULL, 0}};

/* getopt_long's '?': an unknown option, or a known one without its value. */
static int unknown(const char *arg) {
  const char *name = strncmp(arg, "--", 2) == 0 ? arg + 2 : NULL;
  size_t len = name ? strcspn(name, "=") : 0;
  for (const struct option *l = longopts; name && l->name; l++)
    if (strlen(l->name) == len && strncmp(l->name, name, len) == 0)
      return bad("option needs a value", arg);
  return bad("unknown option", arg);
}

static int one_option(struct dcc_options *o, int c, char *arg) {
  bool ethernet = false;
  switch (c) {
  case 'H':
    return parse_hostlist(o, arg);
  case 'f':
    return parse_hostfile(o, arg);
  case 'O':
    if (set_choice("--over is direct or ethernet", arg, "direct", "thunderbolt",
                   "ethernet", &ethernet))
      return -1;
    o->direct = !ethernet;
    return 0;
  case 'b': /* MLX calls the fully connected backend jaccl, its RDMA ring
               jaccl-ring */
    return set_choice("--backend is ring, mesh, jaccl or jaccl-ring",
                      strcmp(arg, "jaccl") ? arg : "mesh", "ring", "jaccl-ring",
                      "mesh", &o->mesh);
  case 'o':
    o->output = arg;
    return 0;
  case 'd':
    o->dot = true;
    return 0;
  case 'a':
    o->auto_setup = true;
    return 0;
  case 'A':
    o->auto_setup = false;
    return 0;
  case 'e':
    return add_env(o, arg);
  case 'i':
    o->ignore_unreachable = true;
    return 0;
  case 'v':
    o->verbose = true;
    return 0;
  case 'h':
    fputs(usage, stdout);
    return 1;
  default:
    return bad("unknown option", NULL);
  }
}

int dcc_parse_options(int argc, char **argv, struct dcc_options *o) {
  static char local[] = "127.0.0.1";
  *o = (struct dcc_options){.hosts = {local}, .nhosts = 1, .direct = true};
  int c, rc = 0;
  opterr = 0;
  while (rc == 0 && (c = getopt_long(argc, argv, "h", longopts, NULL)) != -1)
    rc = c == '?' ? unknown(argv[optind - 1]) : one_option(o, c, optarg);
  if (rc == 0 && optind < argc)
    return bad("unexpected argument", argv[optind]);
  return rc;
}
