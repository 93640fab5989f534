/* Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
 *
 * The C API (sdk/capi/public/nodefl/nodefl.h) from C, compiled as C99 and
 * linked against libnodefl.so, as an app would. Two modes, driven by
 * capi_test.sh (which makes the PKI with nodefl-ca and runs nodefl-server):
 *
 *   capi_test checks PKI_DIR
 *       no network: version, config defaults, refusals with their messages
 *       (bad PEM, a key that is not the certificate's, unknown job, missing
 *       neighbours, ...), a handle's state and counters before any
 *       connection, and calls refused in the wrong state.
 *   capi_test job PORT PKI_DIR
 *       a real neighbour-echo job against nodefl-server on 127.0.0.1:PORT:
 *       devices 0 and 1 (each the other's neighbour) over POSIX sockets in
 *       one poll loop, device 0 cut off after its Welcome and resumed on a
 *       new connection, both sealing a message to the other through the
 *       relay, then Goodbye; before that, a device expecting another
 *       server name fails its handshake with a TLS error.
 *
 * Prints "ok:" / "FAIL:" per check and "capi test: OK" at the end.
 */
#define _POSIX_C_SOURCE 200809L

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "nodefl/nodefl.h"

static int g_failed = 0;

static void check(int ok, const char* what, const char* detail) {
  printf("%s %s%s%s\n", ok ? "ok:  " : "FAIL:", what, detail != NULL && detail[0] != '\0' ? ": " : "",
         detail != NULL ? detail : "");
  if (!ok) g_failed = 1;
}

static uint64_t now_us(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (uint64_t)t.tv_sec * 1000000u + (uint64_t)t.tv_nsec / 1000u;
}

/* A whole small file (credentials); exits on failure. */
static uint8_t* read_file(const char* dir, const char* name, size_t* size) {
  char path[512];
  FILE* f;
  uint8_t* data;
  long n;
  snprintf(path, sizeof path, "%s/%s", dir, name);
  f = fopen(path, "rb");
  if (f == NULL || fseek(f, 0, SEEK_END) != 0 || (n = ftell(f)) < 0 || fseek(f, 0, SEEK_SET) != 0) {
    fprintf(stderr, "capi_test: cannot read %s\n", path);
    exit(2);
  }
  data = malloc((size_t)n + 1);
  if (data == NULL || fread(data, 1, (size_t)n, f) != (size_t)n) {
    fprintf(stderr, "capi_test: cannot read %s\n", path);
    exit(2);
  }
  fclose(f);
  *size = (size_t)n;
  return data;
}

typedef struct credentials {
  uint8_t *ca, *cert, *key;
  size_t ca_size, cert_size, key_size;
} credentials;

static void load_credentials(const char* pki, uint32_t id, credentials* c) {
  char name[64];
  c->ca = read_file(pki, "ca.crt", &c->ca_size);
  snprintf(name, sizeof name, "devices/device-%u.crt", (unsigned)id);
  c->cert = read_file(pki, name, &c->cert_size);
  snprintf(name, sizeof name, "devices/device-%u.key", (unsigned)id);
  c->key = read_file(pki, name, &c->key_size);
}

static void free_credentials(credentials* c) {
  free(c->ca);
  free(c->cert);
  free(c->key);
}

/* Device 1's session log lines (nodefl_config.log_callback). */
typedef struct {
  unsigned lines;
  unsigned registered; /* lines saying it registered */
  int worst_level;
} log_lines;
static log_lines g_device1_log;

static void collect_log(void* context, int32_t level, const char* line) {
  log_lines* log = (log_lines*)context;
  ++log->lines;
  if (strstr(line, "device 1: registered") != NULL) ++log->registered;
  if (level > log->worst_level) log->worst_level = level;
}

/* A neighbour-echo config for `id` with one neighbour. */
static void echo_config(nodefl_config* config, uint32_t id, const uint32_t* neighbour, const credentials* c) {
  nodefl_config_init(config, sizeof *config);
  config->device_id = id;
  config->neighbours = neighbour;
  config->neighbour_count = 1;
  config->server_name = "localhost";
  config->ca = c->ca;
  config->ca_size = c->ca_size;
  config->cert = c->cert;
  config->cert_size = c->cert_size;
  config->key = c->key;
  config->key_size = c->key_size;
}

/* Creation must fail with `want` and a message containing `needle`. */
static void expect_refusal(const nodefl_config* config, nodefl_status want, const char* needle, const char* what) {
  char error[256];
  char detail[400];
  nodefl_device* device = (nodefl_device*)&error; /* must be set to NULL */
  const nodefl_status st = nodefl_device_create(config, &device, error, sizeof error);
  snprintf(detail, sizeof detail, "%s (%s)", error, nodefl_status_text(st));
  check(st == want && device == NULL && strstr(error, needle) != NULL, what, detail);
  nodefl_device_destroy(device);
}

static int run_checks(const char* pki) {
  nodefl_config config;
  credentials own, other;
  const uint32_t neighbour = 1;
  const uint32_t twice[2] = {1, 1};
  const uint32_t self[2] = {1, 0};
  nodefl_device* device = NULL;
  char error[256] = "";
  char detail[400];
  nodefl_status st;

  check(nodefl_capi_version() == NODEFL_CAPI_VERSION, "the library's version is the header's", NULL);
  check(nodefl_capi_version() / 10000 == NODEFL_CAPI_VERSION_MAJOR, "... and its major version", NULL);
  check(strcmp(nodefl_status_text(NODEFL_ERR_AGAIN), "no room yet: write the pending output and call again") == 0 &&
            strcmp(nodefl_status_text((nodefl_status)99), "unknown status") == 0,
        "status texts", NULL);

  /* Defaults. */
  memset(&config, 0x5a, sizeof config);
  check(nodefl_config_init(&config, sizeof config) == NODEFL_OK, "config_init", NULL);
  check(config.struct_size == sizeof config && config.job == NULL && config.fedwalk_mode == NULL &&
            config.neighbours == NULL && config.neighbour_count == 0 && config.label == -1 &&
            config.train_hidden == 16 && config.train_out == 16 && config.budget_job_epsilon == 16.0 &&
            config.budget_lifetime_epsilon == 256.0 && config.unlimited_budget == 0 &&
            config.lifetime_epsilon_spent == 0.0 && config.noise_seed == 0 && config.server_name == NULL &&
            config.ca == NULL && config.handshake_timeout_ms == 30000 && config.log_level == NODEFL_LOG_WARNING,
        "config defaults", NULL);
  check(nodefl_config_init(&config, 8) == NODEFL_ERR_VERSION, "config_init refuses a struct below version 1", NULL);
  {
    /* A caller built against version 1.0's header (its config ends at
     * log_level): config_init writes nothing past it, create accepts it. */
    const size_t v1_size = offsetof(nodefl_config, log_level) + sizeof(int32_t);
    unsigned char buffer[sizeof(nodefl_config) + 16];
    nodefl_config* old_config = (nodefl_config*)(void*)buffer;
    memset(buffer, 0xAB, sizeof buffer);
    check(nodefl_config_init(old_config, v1_size) == NODEFL_OK && old_config->struct_size == v1_size &&
              old_config->log_level == NODEFL_LOG_WARNING && buffer[v1_size] == 0xAB &&
              buffer[sizeof buffer - 1] == 0xAB,
          "config_init for a 1.0 caller fills its fields only", NULL);
  }
  check(nodefl_config_init(NULL, sizeof config) == NODEFL_ERR_ARGUMENT, "config_init refuses NULL", NULL);

  load_credentials(pki, 0, &own);
  load_credentials(pki, 1, &other);

  /* Refusals, each with a message naming the field. */
  echo_config(&config, 0, &neighbour, &own);
  config.job = "pagerank";
  expect_refusal(&config, NODEFL_ERR_ARGUMENT, "config.job: unknown job 'pagerank'", "an unknown job is refused");
  echo_config(&config, 0, &neighbour, &own);
  config.neighbour_count = 0;
  expect_refusal(&config, NODEFL_ERR_ARGUMENT, "at least one neighbour", "missing neighbours are refused");
  echo_config(&config, 0, &neighbour, &own);
  config.neighbours = NULL;
  expect_refusal(&config, NODEFL_ERR_ARGUMENT, "config.neighbours is NULL", "NULL neighbours are refused");
  echo_config(&config, 0, twice, &own);
  config.neighbour_count = 2;
  expect_refusal(&config, NODEFL_ERR_ARGUMENT, "neighbour 1 is listed twice", "a duplicate neighbour is refused");
  echo_config(&config, 0, self, &own);
  config.neighbour_count = 2;
  expect_refusal(&config, NODEFL_ERR_ARGUMENT, "own id 0", "the device's own id as neighbour is refused");
  echo_config(&config, 0, &neighbour, &own);
  config.job = "fedwalk";
  expect_refusal(&config, NODEFL_ERR_ARGUMENT, "config.vertices", "fedwalk without vertices is refused");
  echo_config(&config, 0, &neighbour, &own);
  config.fedwalk_mode = "fast";
  expect_refusal(&config, NODEFL_ERR_ARGUMENT, "config.fedwalk_mode: 'fast'", "an unknown fedwalk mode is refused");
  echo_config(&config, 0, &neighbour, &own);
  config.budget_job_epsilon = -1;
  expect_refusal(&config, NODEFL_ERR_ARGUMENT, "budget_job_epsilon", "a negative budget is refused");
  echo_config(&config, 0, &neighbour, &own);
  config.server_name = NULL;
  expect_refusal(&config, NODEFL_ERR_ARGUMENT, "config.server_name is required", "a missing server name is refused");
  echo_config(&config, 0, &neighbour, &own);
  config.ca = (const uint8_t*)"-----BEGIN CERTIFICATE-----\nnot base64 at all\n-----END CERTIFICATE-----\n";
  config.ca_size = strlen((const char*)config.ca);
  expect_refusal(&config, NODEFL_ERR_CREDENTIALS, "config.ca: not a usable", "a bad CA PEM is refused");
  echo_config(&config, 0, &neighbour, &own);
  config.key = other.key; /* device 1's key with device 0's certificate */
  config.key_size = other.key_size;
  expect_refusal(&config, NODEFL_ERR_CREDENTIALS, "matching key", "a key that is not the certificate's is refused");
  echo_config(&config, 0, &neighbour, &own);
  config.cert = NULL;
  expect_refusal(&config, NODEFL_ERR_ARGUMENT, "config.cert is required", "a missing certificate is refused");
  echo_config(&config, 0, &neighbour, &own);
  config.struct_size = 16;
  expect_refusal(&config, NODEFL_ERR_VERSION, "config.struct_size 16", "a struct_size below version 1 is refused");
  check(nodefl_device_create(NULL, &device, NULL, 0) == NODEFL_ERR_ARGUMENT && device == NULL,
        "a NULL config is refused (and a NULL error buffer is fine)", NULL);

  /* A valid device, before any connection. */
  echo_config(&config, 0, &neighbour, &own);
  st = nodefl_device_create(&config, &device, error, sizeof error);
  snprintf(detail, sizeof detail, "%s %s", nodefl_status_text(st), error);
  check(st == NODEFL_OK && device != NULL && error[0] == '\0', "a valid config creates a device", detail);
  /* The inputs were copied: overwriting them changes nothing. */
  memset(own.key, 0, own.key_size);
  memset(&config, 0, sizeof config);
  if (device != NULL) {
    nodefl_stats stats;
    nodefl_ledger ledger;
    const uint8_t* out = NULL;
    size_t pending = 1, consumed = 1;
    uint8_t byte = 0;
    check(nodefl_device_state(device) == NODEFL_STATE_IDLE && !nodefl_device_finished(device) &&
              !nodefl_device_session_ended(device),
          "a new device is idle, not finished", NULL);
    check(nodefl_device_pending_output(device, &out, &pending) == NODEFL_OK && pending == 0,
          "no output before connect", NULL);
    st = nodefl_device_receive(device, &byte, 1, now_us(), &consumed);
    check(st == NODEFL_ERR_STATE && consumed == 0, "receive before connect is refused", nodefl_device_last_error(device));
    st = nodefl_device_consume_output(device, 10, now_us());
    check(st == NODEFL_ERR_ARGUMENT && strstr(nodefl_device_last_error(device), "only 0 pending") != NULL,
          "consuming more output than pending is refused", nodefl_device_last_error(device));
    check(nodefl_device_tick(device, now_us()) == NODEFL_OK, "tick while idle is harmless", NULL);
    memset(&stats, 0xff, sizeof stats);
    stats.struct_size = sizeof stats;
    check(nodefl_device_stats(device, &stats) == NODEFL_OK && stats.connections == 0 && stats.arena_bytes > 0 &&
              stats.echo_sent == 0 && stats.walks_forwarded == 0,
          "stats before connect (an arena was carved)", NULL);
    {
      /* An older, shorter struct ending after `epsilon`: the bytes past it
       * keep the caller's values. */
      const size_t shorter = offsetof(nodefl_ledger, epsilon) + sizeof(double);
      const unsigned char* raw = (const unsigned char*)&ledger;
      size_t k, untouched = 0;
      memset(&ledger, 0xff, sizeof ledger);
      ledger.struct_size = (uint32_t)shorter;
      st = nodefl_device_ledger(device, &ledger);
      for (k = shorter; k < sizeof ledger; ++k) untouched += raw[k] == 0xff;
      check(st == NODEFL_OK && ledger.unbounded == 0 && ledger.epsilon == 0.0 && ledger.struct_size == shorter &&
                untouched == sizeof ledger - shorter,
            "a shorter ledger struct gets only the fields it has", NULL);
    }
    check(nodefl_device_connect(device, now_us()) == NODEFL_OK &&
              nodefl_device_state(device) == NODEFL_STATE_HANDSHAKING &&
              nodefl_device_pending_output(device, &out, &pending) == NODEFL_OK && pending > 0 && out[0] == 0x16,
          "connect queues a TLS ClientHello", NULL);
    {
      uint8_t copy[8];
      check(nodefl_device_copy_output(device, copy, sizeof copy) == sizeof copy && memcmp(copy, out, 8) == 0,
            "copy_output copies the same bytes", NULL);
    }
    check(nodefl_device_close(device, "changed my mind") == NODEFL_OK &&
              nodefl_device_state(device) == NODEFL_STATE_CLOSED,
          "close during the handshake is CLOSED at once", NULL);
  }
  nodefl_device_destroy(device);
  nodefl_device_destroy(NULL);
  check(nodefl_device_state(NULL) == NODEFL_STATE_IDLE && nodefl_device_finished(NULL) == 0 &&
            nodefl_device_connect(NULL, 0) == NODEFL_ERR_ARGUMENT,
        "NULL handles are refused, not crashed on", NULL);
  free_credentials(&own);
  free_credentials(&other);
  return g_failed;
}

/* ---- the job mode: devices over POSIX sockets ---------------------------- */

typedef struct connection {
  nodefl_device* device;
  int fd;
  uint8_t in[4096];
  size_t in_begin, in_end; /* received, not yet taken */
  int lost;
} connection;

static int connect_tcp(int port) {
  struct sockaddr_in a;
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  memset(&a, 0, sizeof a);
  a.sin_family = AF_INET;
  a.sin_port = htons((uint16_t)port);
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (fd < 0 || connect(fd, (struct sockaddr*)&a, sizeof a) != 0) {
    fprintf(stderr, "capi_test: cannot connect to 127.0.0.1:%d: %s\n", port, strerror(errno));
    if (fd >= 0) close(fd);
    return -1;
  }
  return fd;
}

static int open_connection(connection* c, int port) {
  c->fd = connect_tcp(port);
  c->in_begin = c->in_end = 0;
  c->lost = 0;
  return c->fd >= 0 && nodefl_device_connect(c->device, now_us()) == NODEFL_OK;
}

/* One round of the main loop (nodefl.h): write, read, feed, tick. */
static void step(connection* c) {
  const uint8_t* out;
  size_t pending;
  if (c->lost) return;
  while (nodefl_device_pending_output(c->device, &out, &pending) == NODEFL_OK && pending > 0) {
    const ssize_t n = send(c->fd, out, pending, MSG_NOSIGNAL | MSG_DONTWAIT);
    if (n < 0) {
      if (errno != EAGAIN && errno != EWOULDBLOCK) c->lost = 1;
      break;
    }
    nodefl_device_consume_output(c->device, (size_t)n, now_us());
  }
  if (c->in_begin == c->in_end) {
    const ssize_t n = recv(c->fd, c->in, sizeof c->in, MSG_DONTWAIT);
    if (n == 0 || (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK)) c->lost = 1;
    if (n > 0) c->in_begin = 0, c->in_end = (size_t)n;
  }
  if (c->in_begin < c->in_end) {
    size_t taken = 0;
    nodefl_device_receive(c->device, c->in + c->in_begin, c->in_end - c->in_begin, now_us(), &taken);
    c->in_begin += taken;
  }
  nodefl_device_tick(c->device, now_us());
}

/* Runs the connections until `done` says so or `seconds` pass. */
static int run_until(connection* cs, int count, int (*done)(connection*, int), double seconds) {
  const uint64_t deadline = now_us() + (uint64_t)(seconds * 1e6);
  while (!done(cs, count)) {
    struct pollfd p[4];
    int i;
    if (now_us() > deadline) return 0;
    for (i = 0; i < count; ++i) {
      p[i].fd = cs[i].lost ? -1 : cs[i].fd;
      p[i].events = POLLIN;
      p[i].revents = 0;
    }
    poll(p, (nfds_t)count, 20);
    for (i = 0; i < count; ++i) step(&cs[i]);
  }
  return 1;
}

static int welcomed(connection* cs, int count) {
  nodefl_stats stats;
  (void)count;
  memset(&stats, 0, sizeof stats);
  stats.struct_size = sizeof stats;
  nodefl_device_stats(cs[0].device, &stats);
  return stats.frames_in >= 1; /* the server's Welcome */
}

static int all_finished(connection* cs, int count) {
  int i;
  for (i = 0; i < count; ++i) {
    if (!nodefl_device_finished(cs[i].device)) return 0;
  }
  return 1;
}

static int all_closed(connection* cs, int count) {
  int i;
  for (i = 0; i < count; ++i) {
    const uint8_t* out;
    size_t pending = 0;
    nodefl_device_pending_output(cs[i].device, &out, &pending);
    if (!cs[i].lost && (nodefl_device_state(cs[i].device) != NODEFL_STATE_CLOSED || pending > 0)) return 0;
  }
  return 1;
}

static int failed_or_open(connection* cs, int count) {
  const nodefl_state s = nodefl_device_state(cs[0].device);
  (void)count;
  return s == NODEFL_STATE_FAILED || s == NODEFL_STATE_OPEN || cs[0].lost;
}

static int run_job(int port, const char* pki) {
  credentials creds[2];
  connection cs[2];
  const uint32_t neighbours[2] = {1, 0};
  char error[256], detail[512];
  int i;
  memset(cs, 0, sizeof cs);
  for (i = 0; i < 2; ++i) {
    nodefl_config config;
    nodefl_status st;
    load_credentials(pki, (uint32_t)i, &creds[i]);
    echo_config(&config, (uint32_t)i, &neighbours[i], &creds[i]);
    if (i == 1) {
      /* Device 1's session log goes to the app (info and up), not stderr. */
      config.log_level = NODEFL_LOG_INFO;
      config.log_callback = collect_log;
      config.log_context = &g_device1_log;
    }
    st = nodefl_device_create(&config, &cs[i].device, error, sizeof error);
    check(st == NODEFL_OK, i == 0 ? "device 0 created" : "device 1 created", error);
    if (st != NODEFL_OK) return 1;
  }

  /* First (the server exits after the job): a device expecting another
   * server name fails its handshake with a TLS error. */
  {
    nodefl_config config;
    connection c;
    nodefl_status st;
    memset(&c, 0, sizeof c);
    echo_config(&config, 0, &neighbours[0], &creds[0]);
    config.server_name = "elsewhere.example";
    st = nodefl_device_create(&config, &c.device, error, sizeof error);
    check(st == NODEFL_OK, "a device for another server name is created", error);
    if (st == NODEFL_OK) {
      open_connection(&c, port);
      run_until(&c, 1, failed_or_open, 10);
      st = nodefl_device_tick(c.device, now_us());
      snprintf(detail, sizeof detail, "%s: %s", nodefl_status_text(st), nodefl_device_last_error(c.device));
      check(nodefl_device_state(c.device) == NODEFL_STATE_FAILED && st == NODEFL_ERR_TLS &&
                strncmp(nodefl_device_last_error(c.device), "tls:", 4) == 0,
            "... and its handshake fails with a TLS error and a message", detail);
      step(&c); /* the alert goes out */
      close(c.fd);
      nodefl_device_destroy(c.device);
    }
  }
  /* Device 0 registers, loses its connection, and resumes on a new one. */
  check(open_connection(&cs[0], port), "device 0 connects", nodefl_device_last_error(cs[0].device));
  check(run_until(cs, 1, welcomed, 10), "device 0: handshake and the server's Welcome",
        nodefl_device_last_error(cs[0].device));
  close(cs[0].fd);
  check(open_connection(&cs[0], port), "device 0 reconnects on a new socket", nodefl_device_last_error(cs[0].device));
  check(open_connection(&cs[1], port), "device 1 connects", nodefl_device_last_error(cs[1].device));

  /* The job: each seals one message to the other through the relay. */
  check(run_until(cs, 2, all_finished, 30), "both devices finished the neighbour-echo job",
        nodefl_device_last_error(cs[0].device));
  for (i = 0; i < 2; ++i) {
    nodefl_stats stats;
    nodefl_ledger ledger;
    memset(&stats, 0, sizeof stats);
    stats.struct_size = sizeof stats;
    memset(&ledger, 0, sizeof ledger);
    ledger.struct_size = sizeof ledger;
    nodefl_device_stats(cs[i].device, &stats);
    nodefl_device_ledger(cs[i].device, &ledger);
    snprintf(detail, sizeof detail,
             "connections=%u handshakes=%u resumed=%u echo_sent=%u echo_received=%u frames_in=%llu bytes_sent=%llu "
             "epsilon=%g",
             stats.connections, stats.handshakes, stats.resumed, stats.echo_sent, stats.echo_received,
             (unsigned long long)stats.frames_in, (unsigned long long)stats.bytes_sent, ledger.epsilon);
    check(stats.echo_sent == 1 && stats.echo_received == 1 && stats.bytes_sent > 0 && ledger.epsilon == 0.0 &&
              ledger.unbounded == 0,
          i == 0 ? "device 0 sent and verified one sealed message, spent nothing"
                 : "device 1 sent and verified one sealed message, spent nothing",
          detail);
    if (i == 0) {
      check(stats.connections == 2 && stats.handshakes == 2 && stats.resumed == 1,
            "device 0 resumed its session on its second connection", detail);
    }
  }

  snprintf(detail, sizeof detail, "lines=%u registered=%u worst_level=%d", g_device1_log.lines,
           g_device1_log.registered, g_device1_log.worst_level);
  check(g_device1_log.registered == 1 && g_device1_log.worst_level <= NODEFL_LOG_INFO,
        "device 1's session log reached its log_callback (registered, nothing worse than info)", detail);

  /* Goodbye. */
  for (i = 0; i < 2; ++i) {
    const nodefl_status st = nodefl_device_close(cs[i].device, "capi test done");
    check(st == NODEFL_OK && nodefl_device_state(cs[i].device) != NODEFL_STATE_FAILED,
          i == 0 ? "device 0: close queues its Goodbye" : "device 1: close queues its Goodbye",
          nodefl_device_last_error(cs[i].device));
  }
  check(run_until(cs, 2, all_closed, 10), "both connections closed cleanly, output written", NULL);
  for (i = 0; i < 2; ++i) {
    close(cs[i].fd);
    nodefl_device_destroy(cs[i].device);
  }

  for (i = 0; i < 2; ++i) free_credentials(&creds[i]);
  return g_failed;
}

int main(int argc, char** argv) {
  int failed;
  if (argc == 3 && strcmp(argv[1], "checks") == 0) {
    failed = run_checks(argv[2]);
  } else if (argc == 4 && strcmp(argv[1], "job") == 0) {
    failed = run_job(atoi(argv[2]), argv[3]);
  } else {
    fprintf(stderr, "usage: capi_test checks PKI_DIR | capi_test job PORT PKI_DIR\n");
    return 2;
  }
  printf("capi test: %s\n", failed ? "FAIL" : "OK");
  return failed ? 1 : 0;
}
