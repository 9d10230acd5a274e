/* Agreement on the survivors of a group (issue 37, the heart of
 * dc_group_shrink): a flooding consensus over suspect sets, with the loss
 * of a connection (or a peer silent past the timeout) as the failure
 * detector. The rounds are pure (no sockets, no clock), so that a test
 * can drive them; dc_agree_run at the end drives them over sockets.
 *
 * Every rank alive runs rounds. In round r it sends dc_agree_encode() to
 * every rank it does not suspect, then reads one message from each of them
 * (dc_agree_receive), or marks it suspect (dc_agree_suspect) when its
 * connection closes or it stays silent past the timeout; a message's
 * suspects join ours. dc_agree_end_round() then decides when the round
 * changed nothing for us: any two ranks that decide in one round hold the
 * same set, since each heard the other's set at the start of the round and
 * neither grew. A rank that decides sends one last, decided message to
 * those it does not suspect and stops; a rank that reads a decided message
 * takes its set, decides and relays it the same way, so the ranks behind
 * end with the first decision. With f failures it ends within f + 2
 * rounds: each round that does not decide adds a suspect.
 *
 * Failure cases: a rank that dies after deciding leaves its decision to the
 * others who heard it; one that dies before, during a round, is suspected
 * by those who wait for it. A rank silent past the timeout but alive
 * (stopped) is left out: the detector is not perfect there. It learns so
 * from a message naming it (DC_ERR_ABORTED); but reading the others' first
 * round after it wakes, it may decide a membership nobody else holds, so
 * the group built on the decision must make its id from the members, and
 * fail for that rank alone. The membership decided may
 * still hold a rank that died after the others heard it: dc_group_shrink
 * then runs a second agreement, with a veto (dc_agree_veto) from any member
 * whose set-up of the new group failed, and all set up again without it. */
#ifndef DC_CORE_AGREE_H
#define DC_CORE_AGREE_H

#include <stddef.h>
#include <stdint.h>

#include "distcomm.h"
#include "transport/auth.h"

#define DC_AGREE_MAX_RANKS 65536

typedef struct dc_agree {
  int size, me, round;
  int decided;
  int veto, prev_veto; /* one more bit agreed like a suspect: "no" */
  int words;           /* uint64_t words of a set */
  uint64_t *sus;       /* suspects known now (never me) */
  uint64_t *prev;      /* suspects sent at the start of this round */
  uint64_t *told;      /* peers whose decided message was read */
} dc_agree;

/* A rank me of a group of size, suspecting nobody yet. DC_ERR_INVALID for a
 * bad size or rank, DC_ERR_NOMEM. */
dc_status dc_agree_init(dc_agree *a, int size, int me);
void dc_agree_free(dc_agree *a);

/* The failure detector: peer's connection closed, or it was silent past
 * the timeout. Also for ranks already known lost before the first round. */
void dc_agree_suspect(dc_agree *a, int peer);
int dc_agree_suspects(const dc_agree *a, int peer);

/* A vote against, agreed as the suspects are (the union): once any rank
 * vetoes before the decision, every rank that decides holds the veto.
 * dc_group_shrink's second agreement: "my set-up of the new group failed". */
void dc_agree_veto(dc_agree *a);

/* Whether to send to and read from peer this round: not me, not suspect. */
int dc_agree_talks_to(const dc_agree *a, int peer);

/* Bytes of one message for a group of size. Encode this round's message
 * (the suspects now, or the decision once decided) once per round, before
 * reading any peer: the round decides against the set sent. */
size_t dc_agree_msg_bytes(int size);
void dc_agree_encode(dc_agree *a, unsigned char *out);

/* peer's message for this round. DC_ERR_MISMATCH (why says what) for a
 * message of another round, size or kind; DC_ERR_ABORTED when its set
 * names me: the others left me out. */
dc_status dc_agree_receive(dc_agree *a, int peer, const unsigned char *msg,
                           size_t len, char *why, size_t whylen);

/* After every peer this round was read or suspected: 1 when decided (send
 * the decided message once more, then stop), else 0 and the next round. */
int dc_agree_end_round(dc_agree *a);

/* The decided members in the old order: writes them to ranks (size
 * entries room) and returns how many; *me_new is this rank's new rank. */
int dc_agree_members(const dc_agree *a, int *ranks, int *me_new);

/* After dc_agree_run, the stream from a member still holds its messages
 * up to its decided one unless that was read (dc_agree_told): what comes
 * next (dc_group_shrink's addresses) follows it. dc_agree_decision says of
 * one message: 0 a round message (skip it), 1 the decision we hold, or
 * DC_ERR_MISMATCH (why says what) for another decision or a bad one. */
int dc_agree_told(const dc_agree *a, int peer);
dc_status dc_agree_decision(const dc_agree *a, int peer,
                            const unsigned char *msg, size_t len, int *same,
                            char *why, size_t whylen);

/* The votes' MAC: with the job token, every message on the wire is followed
 * by DC_AUTH_PROOF_BYTES, a MAC over the group, the phase (one per
 * agreement on the same sockets), the sender and receiver, both ends'
 * nonces and the message, so that a vote forged, altered or replayed from
 * another connection or agreement is refused. auth NULL or off: none. */
typedef struct dc_agree_seal {
  const dc_auth *auth;
  uint64_t group;
  uint32_t phase;
  const unsigned char *nonces; /* size x DC_AUTH_NONCE_BYTES, by rank */
} dc_agree_seal;

/* Bytes of one message on the wire: dc_agree_msg_bytes and the MAC. */
size_t dc_agree_wire_bytes(int size, const dc_agree_seal *s);
/* The MAC of msg (len bytes) from rank from to rank to, into mac. */
void dc_agree_seal_msg(const dc_agree_seal *s, int from, int to,
                       const unsigned char *msg, size_t len,
                       unsigned char mac[DC_AUTH_PROOF_BYTES]);
/* wire: a message of len bytes and its MAC, from rank from to rank to.
 * DC_ERR_AUTH (why names the sender) when the MAC is wrong. */
dc_status dc_agree_unseal(const dc_agree_seal *s, int from, int to,
                          const unsigned char *wire, size_t len, char *why,
                          size_t whylen);

/* The rounds over one connected stream socket per peer (fds[peer], -1 for
 * none and for me), ranks already known lost suspected beforehand. A
 * peer whose socket closes or fails is suspected at once, one silent for
 * timeout seconds in a round too; at the decision, it is sent to every
 * peer whose socket is open. Messages are sealed under seal (NULL: none).
 * Returns DC_OK once decided (*rounds, when not NULL, says how many ran), or
 * the first error with why naming the peer. The caller owns and closes fds. */
dc_status dc_agree_run(dc_agree *a, const int *fds, const dc_agree_seal *seal,
                       double timeout, int *rounds, char *why, size_t whylen);

#endif
