/* machine.c - see machine.h. */
#include "machine.h"
#include "alloc_ops.h"
#include "sim_ctl.h"

#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

static void cpu_model(char *out, size_t len)
{
    char line[512];
    FILE *f = fopen("/proc/cpuinfo", "r");
    snprintf(out, len, "unknown");
    while (f && fgets(line, sizeof line, f)) {
        char *colon = strchr(line, ':');
        if (strncmp(line, "model name", 10) != 0 || !colon)
            continue;
        colon += 1 + (colon[1] == ' ');
        colon[strcspn(colon, "\n")] = '\0';
        snprintf(out, len, "%s", colon);
        break;
    }
    if (f)
        fclose(f);
}

void machine_probe(machine_t *m)
{
    time_t now = time(NULL);
    struct tm tm;
    localtime_r(&now, &tm);
    strftime(m->date, sizeof m->date, "%Y-%m-%d %H:%M:%S %z", &tm);
    cpu_model(m->cpu, sizeof m->cpu);
    m->nproc = sysconf(_SC_NPROCESSORS_ONLN);
    m->runtime = simctl_runtime_name();
}

void machine_print(FILE *f, const machine_t *m, const bench_opts_t *o)
{
    fprintf(f, "cca-bench  %s\n", m->date);
    fprintf(f, "machine:   %ld CPUs, %s\n", m->nproc, m->cpu);
    fprintf(f, "runtime:   %s\n", m->runtime);
    fprintf(f, "reps:      %d%s (median and min..max over the repetitions; allocators "
            "interleaved in each)\n", o->reps, o->quick ? ", quick run" : "");
    struct stat st;
    fprintf(f, "traces:    %s%s\n", o->traces_dir,
            stat(o->traces_dir, &st) == 0 && S_ISDIR(st.st_mode) ? "" : " (absent: replay has only --trace's)");
    fprintf(f, "allocators:");
    for (size_t i = 0; i < o->n_allocs; i++)
        fprintf(f, " %s", o->allocs[i].label);
    fprintf(f, "\n");
    if (bench_torch_skipped[0])                        /* PyTorch's allocator: only where a torch was found */
        fprintf(f, "torch-native: skipped: %s\ntorch-expandable: skipped: %s\n", bench_torch_skipped,
                bench_torch_skipped);
    for (size_t i = 0; i < o->n_allocs; i++)
        if (o->allocs[i].modelled) {
            fprintf(f, "modelled:  rows marked (modelled) add per-call latencies of the real "
                    "runtime to the simulator: %s\n", simctl_model_text());
            break;
        }
}
