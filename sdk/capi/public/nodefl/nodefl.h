/* Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
 *
 * nodefl.h: the nodefl device as a C API, for apps that cannot take C++
 * types across their boundary (Android through JNI, iOS through Swift or
 * Objective-C, any FFI). One handle (nodefl_device) is one graph node's
 * device: its TLS client, its session with nodefl-server and the SDK roles
 * of one job, exactly as nodefl-emulate and the board client nodefl-device
 * build it. The API is sans-IO: the app owns the socket and the clock and
 * moves ciphertext in and out (docs/porting.md, "The connection").
 *
 * C99; every type here is a fixed-size integer, double, float, pointer or
 * size_t, so the layout is the platform C ABI's. No C++ exception or type
 * crosses this boundary: every function catches what the C++ inside throws
 * (an allocation failure becomes NODEFL_ERR_NO_MEMORY).
 *
 * ---- Versioning ------------------------------------------------------------
 * NODEFL_CAPI_VERSION is the header's version, nodefl_capi_version() the
 * library's; an app checks that their MAJOR parts agree. Within one major
 * version, functions are only added and structs only grow at their end.
 * Every struct passed across starts with `struct_size`, the size the caller
 * compiled it with (set it to sizeof, or let nodefl_config_init do it):
 *   - input (nodefl_config): fields past the caller's struct_size take their
 *     defaults; a struct larger than the library knows is accepted only if
 *     the bytes it does not know are zero (NODEFL_ERR_VERSION otherwise, as
 *     for a struct_size below the first version's);
 *   - output (nodefl_ledger, nodefl_stats): the library writes at most
 *     struct_size bytes; fields it does not know keep the caller's values.
 *
 * ---- Threads ----------------------------------------------------------------
 * A handle is not thread-safe: call its functions from one thread at a time
 * (any thread; hand it over with the app's own synchronisation). Different
 * handles share nothing mutable and may be driven from different threads
 * at once. What is process-wide: the entropy source (getrandom(2), used to
 * seed each handle's generators, stateless), stderr when no log_callback is
 * given (the session's log lines go there, see log_level; a log_callback is
 * called on the thread driving its handle, during that handle's calls, and
 * must not call back into the handle), the SDK's panic handler (a broken
 * internal invariant traps the process; the C API checks its arguments so
 * that no bad call reaches one), and MbedTLS, of which each handle has its
 * own contexts (no MbedTLS state is shared between handles).
 * nodefl_capi_version, nodefl_status_text and nodefl_config_init may be
 * called from any thread at any time.
 *
 * ---- Lifetime ---------------------------------------------------------------
 * nodefl_device_create copies everything it is given (neighbour ids,
 * features, strings; the PEM buffers are parsed into MbedTLS's contexts and
 * not kept): the config and every buffer it points to may be freed as soon
 * as create returns. A handle lives until nodefl_device_destroy, which
 * frees everything. It overwrites the connection buffers the C API owns
 * (TLS ciphertext, decrypted plaintext) and its error text; MbedTLS
 * zeroises key material (the device key, session keys) when it frees its
 * contexts. Not overwritten (freed as they are): the session's frame
 * buffers and the roles' arena, which the C++ SDK owns. Pointers the
 * library returns:
 *   - nodefl_status_text(): static strings, valid forever;
 *   - nodefl_device_last_error(): valid until the next call on that handle;
 *   - nodefl_device_pending_output(): a view valid until the next call on
 *     that handle other than the read-only ones (functions taking a
 *     `const nodefl_device*`).
 *
 * ---- Memory -----------------------------------------------------------------
 * Unlike the C++ SDK (which never allocates), a handle allocates on the
 * heap (malloc/new) once, in nodefl_device_create: the handle with its
 * connection buffers (about 16 KiB), the session's frame, output and
 * kept-send buffers (about 48 KiB) and one arena that the job's roles are
 * carved from, sized by the SDK from the degree and the job (a few KiB for
 * neighbour-echo, tens to hundreds of KiB for paper-mode FedWalk with a
 * large vertex count; nodefl_stats.arena_bytes says how much). After create,
 * only MbedTLS allocates: during each TLS handshake (certificates, key
 * exchange) and for its record buffers (about 2 x 16 KiB per handle, kept
 * until destroy), through its default calloc/free. Lumos training
 * (lumos_train) keeps its model buffers on the heap too (allocated at
 * create) and allocates one small list when training starts.
 *
 * ---- The main loop (docs/porting.md, "The connection") ----------------------
 *   nodefl_device_connect(dev, now)      after every new TCP connection
 *   loop:
 *     nodefl_device_pending_output(dev, &p, &n); write p[0..n) to the socket
 *     nodefl_device_consume_output(dev, written, now)
 *     nodefl_device_receive(dev, bytes, len, now, &consumed): bytes not
 *       consumed are offered again after the next write (back-pressure is a
 *       count, not an error)
 *     nodefl_device_tick(dev, now) at least every heartbeat interval (the
 *       server's, typically seconds; 200 ms is a good period) and while
 *       handshaking
 *     state CLOSED with no pending output, or FAILED: write what is still
 *       pending (an alert, a Goodbye) and close the socket
 * Rules: write the pending output after every call (any call may queue
 * bytes); `now_us` is microseconds on a monotonic clock, never decreasing,
 * from any fixed epoch. Errors are sticky per connection: after a failure
 * (NODEFL_ERR_TLS, _SESSION, _TIMEOUT) every call returns it again until the
 * next nodefl_device_connect on a new socket, which resumes the session, so
 * the server re-delivers what the device had not acknowledged. Stop
 * reconnecting when nodefl_device_session_ended() says the server ended
 * the session, or once nodefl_device_finished() and the app is done.
 * Privacy: persist nodefl_ledger's lifetime totals whenever they grow,
 * before writing the pending output that may carry the release, and pass
 * them back in the config's lifetime_*_spent on the next create.
 */
#ifndef NODEFL_NODEFL_H_
#define NODEFL_NODEFL_H_

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define NODEFL_CAPI_VERSION_MAJOR 1
#define NODEFL_CAPI_VERSION_MINOR 1
#define NODEFL_CAPI_VERSION_PATCH 0
/* MAJOR * 10000 + MINOR * 100 + PATCH. */
#define NODEFL_CAPI_VERSION \
  (NODEFL_CAPI_VERSION_MAJOR * 10000 + NODEFL_CAPI_VERSION_MINOR * 100 + NODEFL_CAPI_VERSION_PATCH)

#if defined(_WIN32)
#define NODEFL_API
#elif defined(__GNUC__)
#define NODEFL_API __attribute__((visibility("default")))
#else
#define NODEFL_API
#endif

/* The library's NODEFL_CAPI_VERSION. */
NODEFL_API uint32_t nodefl_capi_version(void);

typedef enum nodefl_status {
  NODEFL_OK = 0,
  NODEFL_ERR_ARGUMENT = 1,     /* a bad argument or config field: the message names it */
  NODEFL_ERR_VERSION = 2,      /* a struct_size this library does not accept */
  NODEFL_ERR_CREDENTIALS = 3,  /* the CA, certificate or key cannot be used */
  NODEFL_ERR_NO_MEMORY = 4,    /* an allocation failed; nothing was created */
  NODEFL_ERR_STATE = 5,        /* not possible now (receive before connect, connect after the roles failed) */
  NODEFL_ERR_AGAIN = 6,        /* no room yet: write the pending output, then call again */
  NODEFL_ERR_TLS = 7,          /* the connection failed in TLS (certificate, alert, bad record) */
  NODEFL_ERR_SESSION = 8,      /* the session failed (the server's Error, a protocol violation) */
  NODEFL_ERR_TIMEOUT = 9,      /* the handshake or the server took too long: reconnect */
  NODEFL_ERR_ROLES = 10,       /* the job's roles failed: the device cannot take part in the rest of it */
  NODEFL_ERR_INTERNAL = 11     /* a bug in nodefl: the message says where */
} nodefl_status;

/* A static English text for `status` ("unknown status" for others). */
NODEFL_API const char* nodefl_status_text(nodefl_status status);

typedef enum nodefl_log_level {
  NODEFL_LOG_DEBUG = 0,
  NODEFL_LOG_INFO = 1,
  NODEFL_LOG_WARNING = 2,
  NODEFL_LOG_ERROR = 3
} nodefl_log_level;

/* What nodefl_device_create needs. Fill with nodefl_config_init, then set
 * at least device_id, neighbours, server_name and the three credentials.
 * Everything is copied by create. */
typedef struct nodefl_config {
  uint32_t struct_size;  /* sizeof(nodefl_config) as compiled by the caller */
  uint32_t device_id;    /* this node's id: its certificate's "device-<id>" */
  /* The node's neighbour ids (any order; no duplicates, not device_id; at
   * least one). */
  const uint32_t* neighbours;
  size_t neighbour_count;
  uint32_t degree;          /* the real degree when neighbours is a capped subset (0: neighbour_count) */
  uint32_t max_neighbours;  /* fedwalk jobs: the public neighbour cap the server uses (0: none) */
  /* "neighbour-echo" (default), "fedwalk-hct", "fedwalk", "fedwalk-histograms",
   * "secure-compare", "lumos-trees" or "secure-aggregate": the job the
   * server runs, which decides the roles and when the device is finished. */
  const char* job;
  const char* fedwalk_mode;  /* "strict" (default) or "paper": the server's fedwalk_mode */
  uint32_t vertices;         /* fedwalk jobs (required, 2..65535): the most vertices the job's graph may have */
  /* Lumos training (job "lumos-trees" with lumos_train != 0): the node's
   * features, its class (-1: none) and the model widths to make room for. */
  int32_t label;
  const float* features;
  size_t feature_count;
  int32_t lumos_train;
  uint32_t train_classes;  /* 0: link task only */
  uint32_t train_hidden;   /* default 16 */
  uint32_t train_out;      /* default 16 */
  /* The privacy budget the device enforces whatever the server asks:
   * per job and over the device's life (defaults 16 and 256). With
   * unlimited_budget != 0 there is no limit and exact releases (the papers'
   * modes) are allowed. */
  double budget_job_epsilon;
  double budget_lifetime_epsilon;
  int32_t unlimited_budget;
  /* Lifetime spend of the device's earlier lives (nodefl_ledger's
   * lifetime totals as the app persisted them; 0 on the first start). */
  double lifetime_epsilon_spent;
  double lifetime_delta_spent;
  /* Non-zero: the noise generator is seeded from this and device_id, so
   * runs repeat draw for draw. Experiments only: it makes the noise known. */
  uint64_t noise_seed;
  /* The server's name as its certificate states it (NUL-terminated). */
  const char* server_name;
  /* The deployment CA certificate, this device's certificate and its key
   * (PEM, with or without the trailing NUL, or DER; each at most 4 KiB). */
  const uint8_t* ca;
  size_t ca_size;
  const uint8_t* cert;
  size_t cert_size;
  const uint8_t* key;
  size_t key_size;
  uint32_t handshake_timeout_ms; /* give up on a TLS handshake after this (default 30000; 0: never) */
  int32_t log_level;             /* session log lines to stderr from this level (default NODEFL_LOG_WARNING) */
  /* Since 1.1: where those lines go instead of stderr (NULL: stderr), e.g.
   * __android_log_write or os_log. `line` is NUL-terminated, without a
   * newline, valid during the call only; `level` is a nodefl_log_level. */
  void (*log_callback)(void* log_context, int32_t level, const char* line);
  void* log_context;
} nodefl_config;

/* Sets every field of `config` to its default and struct_size to
 * `config_size` (pass sizeof *config). NODEFL_ERR_VERSION if config_size is
 * below the first version's size; NODEFL_ERR_ARGUMENT for NULL. */
NODEFL_API nodefl_status nodefl_config_init(nodefl_config* config, size_t config_size);

typedef struct nodefl_device nodefl_device;

/* Creates a device from `config` (validated, then copied) and stores it in
 * *out (NULL on failure). On failure a one-line message goes to `error`
 * (NUL-terminated, truncated to error_size; error may be NULL). Loads the
 * credentials, seeds the generators, builds the session and the job's
 * roles; does no I/O. */
NODEFL_API nodefl_status nodefl_device_create(const nodefl_config* config, nodefl_device** out, char* error,
                                              size_t error_size);

/* Frees the device and zeroises what the C API held. NULL is ignored. The
 * socket is the app's: say Goodbye first (nodefl_device_close) if the
 * connection is open. */
NODEFL_API void nodefl_device_destroy(nodefl_device* device);

/* A new transport connection is up (the first or a reconnect): forgets the
 * previous connection and starts the TLS handshake; its ClientHello is
 * then pending output. After the handshake the session starts (a resume on
 * every later connection). NODEFL_ERR_STATE once the roles have failed. */
NODEFL_API nodefl_status nodefl_device_connect(nodefl_device* device, uint64_t now_us);

/* Feeds `size` bytes received from the socket; *consumed says how many
 * were taken (fewer when the output is full: write it, then offer the rest
 * again). NODEFL_ERR_STATE before connect. After the connection closed,
 * bytes are taken and dropped. */
NODEFL_API nodefl_status nodefl_device_receive(nodefl_device* device, const uint8_t* data, size_t size,
                                               uint64_t now_us, size_t* consumed);

/* The ciphertext to write to the socket, oldest first, as a view into the
 * device (no copy) in *data and *size (0 when nothing waits). Valid until
 * the next call on the handle other than the read-only ones. */
NODEFL_API nodefl_status nodefl_device_pending_output(const nodefl_device* device, const uint8_t** data,
                                                      size_t* size);

/* The same bytes copied into the caller's buffer, for bindings that cannot
 * hold a pointer into the library (JNI copies into a Java array anyway):
 * copies the first min(pending, capacity) bytes, returns how many. Does not
 * consume them. Returns 0 for a NULL device or buffer. */
NODEFL_API size_t nodefl_device_copy_output(const nodefl_device* device, uint8_t* buffer, size_t capacity);

/* The first `count` pending bytes were written to the socket: drops them
 * and uses the room (more frames become records, input that waited is
 * processed). NODEFL_ERR_ARGUMENT if count exceeds what is pending. */
NODEFL_API nodefl_status nodefl_device_consume_output(nodefl_device* device, size_t count, uint64_t now_us);

/* Timers: the handshake deadline, heartbeats, acknowledgements and the
 * roles' progress. NODEFL_ERR_TIMEOUT when the server is gone: reconnect. */
NODEFL_API nodefl_status nodefl_device_tick(nodefl_device* device, uint64_t now_us);

/* Says Goodbye (`reason`, NULL for "device closing") and then TLS
 * close_notify: state CLOSED once both are pending output; write it, then
 * close the socket. During the handshake the state is CLOSED at once.
 * NODEFL_ERR_AGAIN when the Goodbye does not fit yet: write output and call
 * again. */
NODEFL_API nodefl_status nodefl_device_close(nodefl_device* device, const char* reason);

typedef enum nodefl_state {
  NODEFL_STATE_IDLE = 0,         /* created; connect starts a connection */
  NODEFL_STATE_HANDSHAKING = 1,  /* TLS handshake in progress */
  NODEFL_STATE_OPEN = 2,         /* session started: frames flow */
  NODEFL_STATE_CLOSING = 3,      /* Goodbye on its way, then close_notify */
  NODEFL_STATE_CLOSED = 4,       /* closed cleanly (by the device or by the server's close_notify) */
  NODEFL_STATE_FAILED = 5        /* the connection failed: nodefl_device_last_error says why */
} nodefl_state;

/* The current connection's state (NODEFL_STATE_IDLE for NULL). */
NODEFL_API nodefl_state nodefl_device_state(const nodefl_device* device);

/* 1 when the session ended for good on the server's word (its Goodbye
 * after the jobs, its Error refusing the device) or on a protocol
 * violation: a new connection would not bring it back. 0 while the session
 * can resume, after the device's own nodefl_device_close or a roles
 * failure, and when the server merely went silent (NODEFL_ERR_TIMEOUT). */
NODEFL_API int nodefl_device_session_ended(const nodefl_device* device);

/* 1 once the configured job has finished on this device. */
NODEFL_API int nodefl_device_finished(const nodefl_device* device);

/* The privacy ledger's totals. */
typedef struct nodefl_ledger {
  uint32_t struct_size;  /* sizeof(nodefl_ledger) as compiled by the caller */
  int32_t unbounded;     /* some release of this life had no finite epsilon (a paper mode) */
  double epsilon;        /* summed over every release of this life of the device */
  double job_epsilon;    /* the current (or last) job's, the larger of epsilon and per-edge epsilon */
  double job_delta;
  double lifetime_epsilon;  /* including the earlier lives passed in the config: persist these */
  double lifetime_delta;
} nodefl_ledger;

NODEFL_API nodefl_status nodefl_device_ledger(const nodefl_device* device, nodefl_ledger* out);

/* Counters, for logs and tests. Role counters stay 0 for roles the job
 * does not run. */
typedef struct nodefl_stats {
  uint32_t struct_size;  /* sizeof(nodefl_stats) as compiled by the caller */
  uint32_t connections;  /* nodefl_device_connect calls */
  uint32_t handshakes;   /* connections whose TLS handshake finished */
  uint32_t resumed;      /* 1 if the server resumed the session on the latest connection */
  uint64_t bytes_received;  /* ciphertext taken by nodefl_device_receive */
  uint64_t bytes_sent;      /* ciphertext reported by nodefl_device_consume_output */
  uint64_t frames_in;
  uint64_t frames_out;
  uint64_t sends_resent;    /* kept messages written again after a reconnect */
  uint64_t arena_bytes;     /* the roles' arena (see Memory) */
  uint32_t echo_sent;       /* neighbour-echo: sealed messages sent and verified on receipt */
  uint32_t echo_received;
  uint32_t hct_reports;     /* fedwalk: clustering-tree reports */
  uint32_t histogram_releases; /* strict fedwalk: noised histograms */
  uint32_t walks_started;   /* paper fedwalk: walks started, forwarded, finished here, dropped */
  uint32_t walks_forwarded;
  uint32_t walks_finished;
  uint32_t walks_dropped;
  uint32_t compare_done;    /* secure comparisons settled and aborted */
  uint32_t compare_aborted;
  uint32_t train_epochs;    /* Lumos training epochs uploaded */
  uint32_t reserved;        /* 0; keeps the size a multiple of 8 */
} nodefl_stats;

NODEFL_API nodefl_status nodefl_device_stats(const nodefl_device* device, nodefl_stats* out);

/* The last failure on this handle as one line ("" when none): the pump's
 * layer and status with MbedTLS's or the server's text. Valid until the
 * next call on the handle. */
NODEFL_API const char* nodefl_device_last_error(const nodefl_device* device);

#ifdef __cplusplus
}  /* extern "C" */
#endif

#endif /* NODEFL_NODEFL_H_ */
