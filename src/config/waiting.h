/* Start-up's waits say on stderr what they wait for, after
 * DISTCOMM_WAIT_NOTE s (default 5) and then every 30 s, without
 * DISTCOMM_VERBOSE: a silent wait of DISTCOMM_TIMEOUT looks like a hang.
 * The caller prints its own line when dc_waiting_due() says so. */
#ifndef DC_CONFIG_WAITING_H
#define DC_CONFIG_WAITING_H

typedef struct dc_waiting {
  double start, next; /* dc_now() seconds */
} dc_waiting;

dc_waiting dc_waiting_start(void);

/* 1 once per period: a line is due now. */
int dc_waiting_due(dc_waiting *w);

/* The sooner of the next line and deadline: a wait slice's end. */
double dc_waiting_until(const dc_waiting *w, double deadline);

/* Seconds since the wait began. */
double dc_waiting_for(const dc_waiting *w);

#endif
