/* compat.c - the plain names of the core's sized calls as exported
 * symbols, for programs linked against a cca.h from before its static
 * inline wrappers (cca.h: "The plain names ..."): each fills or reads the
 * first version of its struct (CCA_V1_*), all such a program can hold.
 * Programs built against today's header never reach these. */
#define CCA_PLAIN_SYMBOLS_                            /* cca.h declares the plain names instead of defining them */
#include "internal.h"

void cca_config_init(cca_config_t *cfg) { cca_config_init_sized(cfg, CCA_V1_CONFIG); }

cca_status_t cca_config_parse(cca_config_t *cfg, const char *conf, char *err, size_t err_len)
{
    return cca_config_parse_sized(cfg, CCA_V1_CONFIG, conf, err, err_len);
}

cca_status_t cca_create(const cca_config_t *cfg, cca_allocator_t **out) { return cca_create_sized(cfg, CCA_V1_CONFIG, out); }

cca_status_t cca_get_config(cca_allocator_t *a, cca_config_t *out) { return cca_get_config_sized(a, out, CCA_V1_CONFIG); }

cca_status_t cca_get_stats(cca_allocator_t *a, cca_stats_t *out) { return cca_get_stats_sized(a, out, CCA_V1_STATS); }


cca_status_t cca_history_walk(cca_allocator_t *a, cca_history_fn fn, void *arg, uint64_t *dropped)
{
    return cca_history_walk_sized(a, fn, arg, dropped, CCA_V1_HISTORY);
}
