/* Choosing the ring's ports on 127.0.0.1 and holding them until the ranks
 * start. */
#ifndef DCL_PORTS_H
#define DCL_PORTS_H

#include <stddef.h>

struct dcl_ports {
  int *ports; /* count consecutive port numbers */
  int *fds;   /* sockets bound to them (reservations), -1 once released */
  size_t count;
};

/* starting_port > 0: use exactly starting_port..starting_port+count-1, failing
 * if one is already taken. starting_port == 0: pick a free block of count
 * ports. The ports stay bound until dcl_release_ports(), so that a second
 * launcher running at the same time cannot pick them. Returns 0, or -1 after
 * printing why. */
int dcl_reserve_ports(long starting_port, size_t count, struct dcl_ports *p);

/* Lets the ranks bind and listen on the ports while the reservations stay:
 * the reserving sockets get SO_REUSEADDR and never listen, so a rank that
 * binds with SO_REUSEADDR (as the library does) may, while another launcher,
 * which binds without it, still finds them taken and picks elsewhere. Held
 * until dcl_ports_free, after the job. Without this, a launcher starting in
 * the gap between our release and our ranks' bind could pick our ports. */
void dcl_share_ports(struct dcl_ports *p);

/* Closes the reservations. */
void dcl_release_ports(struct dcl_ports *p);

void dcl_ports_free(struct dcl_ports *p);

#endif
