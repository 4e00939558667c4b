/*
 * The isolator part of the nestguard C ABI (src/abi/isolator.rs), declared
 * here only until include/nestguard.h is regenerated with it. The Makefile
 * force-includes this file when nestguard.h has no nestguard_isolator_new;
 * delete it once the header has them. The declarations must match
 * src/abi/isolator.rs exactly.
 */

#ifndef NESTGUARD_PENDING_ISOLATOR_ABI_H
#define NESTGUARD_PENDING_ISOLATOR_ABI_H

#include "nestguard.h"

typedef struct nestguard_isolator nestguard_isolator;
/*
 * No typedef for the watch: src/abi/isolator.rs names both the handle type
 * and its constructor function `nestguard_isolator_watch`, and a typedef and
 * a function of the same name cannot coexist in C or C++ (cbindgen's output
 * for it will not compile). Until one of them is renamed, the type is
 * spelled `struct nestguard_isolator_watch`.
 */
struct nestguard_isolator_watch;

#ifdef __cplusplus
extern "C" {
#endif

nestguard_result nestguard_isolator_new(const uint8_t *parameters,
                                        size_t parameters_len,
                                        nestguard_isolator **out);

nestguard_result nestguard_isolator_recover(const nestguard_isolator *isolator,
                                            const uint8_t *recover_info,
                                            size_t recover_info_len);

nestguard_result nestguard_isolator_prepare(const nestguard_isolator *isolator,
                                            const uint8_t *container_id,
                                            size_t container_id_len,
                                            const uint8_t *config,
                                            size_t config_len,
                                            nestguard_bytes **out);

nestguard_result nestguard_isolator_isolate(const nestguard_isolator *isolator,
                                            const uint8_t *container_id,
                                            size_t container_id_len,
                                            uint32_t pid);

nestguard_result nestguard_isolator_watch(const nestguard_isolator *isolator,
                                          const uint8_t *container_id,
                                          size_t container_id_len,
                                          struct nestguard_isolator_watch **out);

int32_t nestguard_isolator_watch_fd(const struct nestguard_isolator_watch *watch);

nestguard_result nestguard_isolator_watch_check(struct nestguard_isolator_watch *watch,
                                                nestguard_bytes **out);

void nestguard_isolator_watch_free(struct nestguard_isolator_watch *watch);

nestguard_result nestguard_isolator_update(const nestguard_isolator *isolator,
                                           const uint8_t *container_id,
                                           size_t container_id_len,
                                           const uint8_t *resources,
                                           size_t resources_len);

nestguard_result nestguard_isolator_usage(const nestguard_isolator *isolator,
                                          const uint8_t *container_id,
                                          size_t container_id_len,
                                          nestguard_bytes **out);

nestguard_result nestguard_isolator_status(const nestguard_isolator *isolator,
                                           const uint8_t *container_id,
                                           size_t container_id_len,
                                           nestguard_bytes **out);

nestguard_result nestguard_isolator_cleanup(const nestguard_isolator *isolator,
                                            const uint8_t *container_id,
                                            size_t container_id_len);

void nestguard_isolator_free(nestguard_isolator *isolator);

#ifdef __cplusplus
}
#endif

#endif /* NESTGUARD_PENDING_ISOLATOR_ABI_H */
