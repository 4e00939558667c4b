/*
 * C consumer of include/nestguard.h: compiled with -std=c11 -Wall -Wextra
 * -Werror -pedantic and linked to libnestguard.so by tests/abi/c_abi.rs (under
 * valgrind when it is installed). Checks the version, the error path and a
 * protobuf round trip through the ABI.
 */
#include "nestguard.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static int passed = 0;
static int failed = 0;

#define CHECK(cond, what)                                                     \
  do {                                                                        \
    if (cond) {                                                               \
      passed++;                                                               \
      printf("ok - %s\n", what);                                              \
    } else {                                                                  \
      failed++;                                                               \
      printf("not ok - %s (%s:%d)\n", what, __FILE__, __LINE__);              \
    }                                                                         \
  } while (0)

static const char *last_error(void) {
  static char buf[512];
  size_t n = 0;
  if (nestguard_error_message(buf, sizeof buf, &n) != NESTGUARD_RESULT_OK) {
    return "(error message did not fit)";
  }
  return buf;
}

static void test_version(void) {
  CHECK(nestguard_abi_version() == NESTGUARD_ABI_VERSION, "ABI version matches the header");
  const char *v = nestguard_library_version();
  CHECK(v != NULL && strlen(v) > 0, "library version is a string");
  CHECK(strcmp(nestguard_result_describe(NESTGUARD_RESULT_NULL_PARAMETER),
               "a required argument was NULL") == 0,
        "result codes have fixed descriptions");
  CHECK(strcmp(nestguard_result_describe(424242u), "unknown result code") == 0,
        "unknown codes are described, not NULL");
}

static void test_round_trip(void) {
  /* mesos.ContainerID { value: "child", parent { value: "parent" } },
   * encoded by hand: field 1 (value), field 2 (parent). */
  static const uint8_t nested[] = {0x0a, 0x05, 'c', 'h', 'i', 'l', 'd',
                                   0x12, 0x08, 0x0a, 0x06, 'p', 'a', 'r',
                                   'e',  'n',  't'};
  char buf[64];
  size_t n = 0;
  nestguard_result rc = nestguard_container_id_render(nested, sizeof nested, buf, sizeof buf, &n);
  CHECK(rc == NESTGUARD_RESULT_OK && strcmp(buf, "parent.child") == 0 && n == 13,
        "hand-encoded nested ContainerID renders as parent.child");

  nestguard_bytes *bytes = NULL;
  const char *text = "parent.child";
  rc = nestguard_container_id_parse(text, strlen(text), &bytes);
  CHECK(rc == NESTGUARD_RESULT_OK && bytes != NULL, "parse parent.child");
  CHECK(nestguard_bytes_len(bytes) == sizeof nested &&
            memcmp(nestguard_bytes_data(bytes), nested, sizeof nested) == 0,
        "parse produces the same protobuf bytes Mesos would");
  nestguard_bytes_free(bytes);

  char small[4];
  n = 0;
  rc = nestguard_container_id_render(nested, sizeof nested, small, sizeof small, &n);
  CHECK(rc == NESTGUARD_RESULT_BUFFER_TOO_SMALL && n == 13,
        "a small buffer reports the size needed");
}

static void test_errors(void) {
  nestguard_bytes *bytes = NULL;
  nestguard_result rc = nestguard_container_id_parse("a b", 3, &bytes);
  CHECK(rc == NESTGUARD_RESULT_INVALID_CONTAINER_ID && bytes == NULL,
        "invalid id rejected, out-param untouched");
  CHECK(strcmp(last_error(), "'ContainerID.value' 'a b' contains invalid characters") == 0,
        "Mesos' validation message");

  static const uint8_t bad_parent[] = {0x0a, 0x01, 'c', 0x12, 0x04, 0x0a, 0x02, '.', '.'};
  char buf[64];
  size_t n = 0;
  rc = nestguard_container_id_render(bad_parent, sizeof bad_parent, buf, sizeof buf, &n);
  CHECK(rc == NESTGUARD_RESULT_INVALID_CONTAINER_ID, "invalid parent rejected");
  CHECK(strstr(last_error(), "'ContainerID.parent' is invalid") != NULL, "parent error names the parent");

  static const uint8_t garbage[] = {0xff, 0xff, 0xff};
  rc = nestguard_container_id_render(garbage, sizeof garbage, buf, sizeof buf, &n);
  CHECK(rc == NESTGUARD_RESULT_PROTOBUF_DECODE, "undecodable bytes give a decode error");

  rc = nestguard_container_id_parse("x", 1, NULL);
  CHECK(rc == NESTGUARD_RESULT_NULL_PARAMETER, "NULL out-param gives a code, not a crash");
  rc = nestguard_container_id_render(NULL, 5, buf, sizeof buf, &n);
  CHECK(rc == NESTGUARD_RESULT_NULL_PARAMETER, "NULL buffer with a length gives a code");
  CHECK(strstr(last_error(), "`id`") != NULL, "the error names the argument");

  char tiny[2];
  n = 0;
  rc = nestguard_error_message(tiny, sizeof tiny, &n);
  CHECK(rc == NESTGUARD_RESULT_BUFFER_TOO_SMALL && n > sizeof tiny, "error text reports its size");

  nestguard_bytes_free(NULL);
  CHECK(nestguard_bytes_len(NULL) == 0 && nestguard_bytes_data(NULL) == NULL, "NULL handles are harmless");
}

/* Hostile dotted input: a chain far deeper than any Mesos agent accepts and
 * a huge text must be refused with a code, not by blowing the stack (which
 * no panic boundary can catch), and without leaking. */
static void test_deep_ids(void) {
  const size_t levels = 1000000;
  char *deep = malloc(2 * levels);
  CHECK(deep != NULL, "allocate a deeply dotted id");
  if (deep == NULL) {
    return;
  }
  for (size_t i = 0; i < levels; i++) {
    deep[2 * i] = 'a';
    deep[2 * i + 1] = '.';
  }
  nestguard_bytes *bytes = NULL;
  nestguard_result rc = nestguard_container_id_parse(deep, 2 * levels - 1, &bytes);
  CHECK(rc == NESTGUARD_RESULT_INVALID_CONTAINER_ID && bytes == NULL,
        "a million-level dotted id is refused");
  CHECK(strstr(last_error(), "exceeds") != NULL, "the error says what limit was exceeded");

  /* 33 short levels: over the nesting bound, within the length bound. */
  char levels33[66];
  for (size_t i = 0; i < 33; i++) {
    levels33[2 * i] = 'a';
    levels33[2 * i + 1] = '.';
  }
  rc = nestguard_container_id_parse(levels33, 65, &bytes);
  CHECK(rc == NESTGUARD_RESULT_INVALID_CONTAINER_ID && bytes == NULL,
        "33 nesting levels are refused");
  CHECK(strstr(last_error(), "32") != NULL, "the error names the nesting bound");
  rc = nestguard_container_id_parse(levels33, 63, &bytes);
  CHECK(rc == NESTGUARD_RESULT_OK && bytes != NULL, "32 nesting levels are accepted");
  nestguard_bytes_free(bytes);

  /* A million dots and nothing else. */
  memset(deep, '.', 2 * levels);
  bytes = NULL;
  rc = nestguard_container_id_parse(deep, 2 * levels, &bytes);
  CHECK(rc == NESTGUARD_RESULT_INVALID_CONTAINER_ID && bytes == NULL, "a million dots are refused");
  free(deep);
}

static void test_panic_boundary(void) {
  nestguard_result rc = nestguard_abi_selftest_panic();
  CHECK(rc == NESTGUARD_RESULT_PANIC, "a panic inside the library returns NESTGUARD_RESULT_PANIC");
  CHECK(strstr(last_error(), "panic") != NULL, "and is described");
  /* The library is still usable afterwards. */
  CHECK(nestguard_abi_version() == NESTGUARD_ABI_VERSION, "library usable after a caught panic");
}

static void test_metrics(void) {
  size_t n = 0;
  char tiny[4] = {'x', 'x', 'x', 'x'};
  nestguard_result rc =
      nestguard_metrics_snapshot(NESTGUARD_METRICS_FORMAT_JSON, tiny, sizeof tiny, &n);
  CHECK(rc == NESTGUARD_RESULT_BUFFER_TOO_SMALL && n > sizeof tiny && tiny[0] == 'x',
        "a too small buffer gets BUFFER_TOO_SMALL, the size needed, and no bytes");
  rc = nestguard_metrics_snapshot(NESTGUARD_METRICS_FORMAT_JSON, NULL, 0, &n);
  CHECK(rc == NESTGUARD_RESULT_BUFFER_TOO_SMALL && n > 1, "a NULL buffer of length 0 asks for the size");
  size_t len = n + 4096;
  char *buf = malloc(len);
  CHECK(buf != NULL, "allocate the snapshot buffer");
  if (buf == NULL) return;
  rc = nestguard_metrics_snapshot(NESTGUARD_METRICS_FORMAT_JSON, buf, len, &n);
  CHECK(rc == NESTGUARD_RESULT_OK && buf[0] == '{' && strlen(buf) + 1 == n,
        "the JSON snapshot is one NUL-terminated object");
  CHECK(strstr(buf, "\"nestguard/authz/allowed\":") != NULL &&
            strstr(buf, "\"nestguard/isolation/launches\":") != NULL,
        "with Mesos-style names");
  /* The Prometheus text is longer: ask for its size first. */
  rc = nestguard_metrics_snapshot(NESTGUARD_METRICS_FORMAT_PROMETHEUS, NULL, 0, &n);
  CHECK(rc == NESTGUARD_RESULT_BUFFER_TOO_SMALL, "the Prometheus text's size");
  free(buf);
  len = n + 4096;
  buf = malloc(len);
  CHECK(buf != NULL, "allocate the Prometheus buffer");
  if (buf == NULL) return;
  rc = nestguard_metrics_snapshot(NESTGUARD_METRICS_FORMAT_PROMETHEUS, buf, len, &n);
  CHECK(rc == NESTGUARD_RESULT_OK &&
            strstr(buf, "# TYPE nestguard_authz_allowed counter\nnestguard_authz_allowed ") != NULL,
        "the Prometheus text has TYPE lines and _ names");
  rc = nestguard_metrics_snapshot(42u, buf, len, &n);
  CHECK(rc == NESTGUARD_RESULT_INVALID_ARGUMENT, "an unknown format is an invalid argument");
  free(buf);
}

/* The launch with descriptors (ABI 0.3): its struct and flag are in the
 * header, and a NULL launcher is refused with a code. */
static void test_launch_with_io(void) {
  /* Descriptors made for the container, never the caller's own 0/1/2. */
  int in[2], out[2];
  CHECK(pipe(in) == 0 && pipe(out) == 0, "pipes for the container's stdio");
  nestguard_container_io io = {in[0], out[1], out[1], 0};
  int32_t pid = 0;
  nestguard_result rc =
      nestguard_launcher_launch_with_io(NULL, NULL, 0, NULL, 0, NULL, 0, NULL, 0, &io, &pid);
  CHECK(rc == NESTGUARD_RESULT_NULL_PARAMETER, "a launch with io on a NULL launcher is refused");
  close(in[0]);
  close(in[1]);
  close(out[0]);
  close(out[1]);
}

int main(void) {
  test_version();
  test_round_trip();
  test_errors();
  test_deep_ids();
  test_panic_boundary();
  test_metrics();
  test_launch_with_io();
  printf("%d passed, %d failed\n", passed, failed);
  return failed == 0 ? 0 : 1;
}
