/*
 * mig_state.c - the MIG state every process that opens the mock shares: the state file.
 *
 * A real driver keeps MIG mode and instances in the kernel; every process that opens NVML sees
 * them (mig-parted, the device plugin, GPU feature discovery, nvidia-smi), and they outlive
 * each of those processes (mig-parted runs Init/Shutdown around every step). The mock keeps
 * them in one text file, `mig_state` of the configuration (default: nvml-mock-mig.state in the
 * folder the configuration file really is in - on lab-node-1 the node's state folder):
 *
 *   gpu GPU-<uuid> current 0|1 pending 0|1
 *   gi GPU-<uuid> <GI ID> <profile ID> <start> <size>
 *   ci GPU-<uuid> <GI ID> <CI ID> <CI profile ID> <start> <size>
 *
 * GPUs are named by UUID, not index, so a process that sees only some GPUs (a container,
 * device_nodes) keeps the others' lines as they are. Readers take a shared flock, a change an
 * exclusive one for its whole read-modify-write; a missing file is MIG off with no instances.
 *
 * Holders: a MIG device is held by a running container while `<mig_state>.held/<MIG UUID>`
 * exists (whoever starts the container creates it, and removes it when the container ends; the
 * tests create it by hand). Destroying its compute instance then fails NVML_ERROR_IN_USE ("In
 * use by another client"), as the driver refuses to destroy an instance a process uses (nvml.h:
 * nvmlComputeInstanceDestroy, nvmlGpuInstanceDestroy - NVML_ERROR_IN_USE).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <unistd.h>

#include "mock.h"

#define MAX_FOREIGN 512                    /* lines of GPUs this process does not see */

static int visible(const char *uuid)
{
    unsigned int i;
    for (i = 0; i < ngpus; i++)
        if (!strcmp(gpus[i].uuid, uuid))
            return (int)i;
    return -1;
}

/* parse one line into all[] (GPUs this process sees); 0 when the line is another GPU's */
static int parse_line(const char *line, struct mig_gpu *all)
{
    char kind[8], uuid[96];
    unsigned int a, b, c, d, e;
    int i;
    if (line[strspn(line, " \t")] == '#' || sscanf(line, "%7s %95s", kind, uuid) != 2)
        return 1;                          /* a comment or blank: dropped (the writer adds its own) */
    i = visible(uuid);
    if (i < 0)
        return 0;
    if (!strcmp(kind, "gpu") && sscanf(line, "%*s %*s current %u pending %u", &a, &b) == 2) {
        all[i].current = a;
        all[i].pending = b;
    } else if (!strcmp(kind, "gi") && sscanf(line, "%*s %*s %u %u %u %u", &a, &b, &c, &d) == 4 && a < MAX_GIS) {
        all[i].gi[a] = (struct gi_state){ 1, b, c, d };
    } else if (!strcmp(kind, "ci") && sscanf(line, "%*s %*s %u %u %u %u %u", &a, &b, &c, &d, &e) == 5
               && a < MAX_GIS && b < MAX_CIS) {
        all[i].ci[a][b] = (struct ci_state){ 1, c, d, e };
    }
    return 1;
}

/* read the file open as fd (locked) into all[]; keep other GPUs' lines in foreign (if given) */
static void parse(int fd, struct mig_gpu *all, char (*foreign)[160], int *nforeign)
{
    char line[160];
    FILE *f;
    int copy = dup(fd);
    memset(all, 0, sizeof(struct mig_gpu) * MAX_GPUS);
    if (nforeign)
        *nforeign = 0;
    if (copy < 0)
        return;
    lseek(copy, 0, SEEK_SET);
    f = fdopen(copy, "r");
    if (!f) {
        close(copy);
        return;
    }
    while (fgets(line, sizeof line, f))
        if (!parse_line(line, all) && foreign && *nforeign < MAX_FOREIGN)
            snprintf(foreign[(*nforeign)++], sizeof foreign[0], "%s", line);
    fclose(f);
}

/* the MIG state of GPU index; 0 when the file cannot be read (then: MIG off, no instances). A
 * process given the library alone (no state file: a container of NVIDIA's DRA driver's CDI
 * spec) reads the state baked into the library at the node's last layout (config.c) */
int mig_state_read(struct mig_gpu *out, unsigned int index)
{
    static struct mig_gpu all[MAX_GPUS];
    int fd = open(conf.mig_state, O_RDONLY | O_CLOEXEC);
    memset(out, 0, sizeof *out);
    if (fd < 0) {
        FILE *baked = errno == ENOENT ? nvml_mock_baked_part(2) : NULL;
        char line[160];
        if (!baked)
            return 0;
        memset(all, 0, sizeof all);
        while (fgets(line, sizeof line, baked))
            parse_line(line, all);
        fclose(baked);
        if (index < ngpus)
            *out = all[index];
        return 1;
    }
    flock(fd, LOCK_SH);
    parse(fd, all, NULL, NULL);
    flock(fd, LOCK_UN);
    close(fd);
    if (index < ngpus)
        *out = all[index];
    return 1;
}

static void write_state(int fd, const struct mig_gpu *all, char (*foreign)[160], int nforeign)
{
    FILE *f;
    unsigned int i, g, c;
    int k, copy = dup(fd);
    if (copy < 0 || ftruncate(fd, 0) != 0 || !(f = fdopen(copy, "w"))) {
        if (copy >= 0)
            close(copy);
        return;
    }
    fseek(f, 0, SEEK_SET);
    fprintf(f, "# nvml-mock MIG state (nvml_mock/README.md), written by the mock under flock\n");
    for (k = 0; k < nforeign; k++)
        fputs(foreign[k], f);
    for (i = 0; i < ngpus; i++) {
        fprintf(f, "gpu %s current %u pending %u\n", gpus[i].uuid, all[i].current, all[i].pending);
        for (g = 0; g < MAX_GIS; g++) {
            if (!all[i].gi[g].used)
                continue;
            fprintf(f, "gi %s %u %u %u %u\n", gpus[i].uuid, g, all[i].gi[g].profile_id,
                    all[i].gi[g].start, all[i].gi[g].size);
            for (c = 0; c < MAX_CIS; c++)
                if (all[i].ci[g][c].used)
                    fprintf(f, "ci %s %u %u %u %u %u\n", gpus[i].uuid, g, c, all[i].ci[g][c].profile_id,
                            all[i].ci[g][c].start, all[i].ci[g][c].size);
        }
    }
    fclose(f);
}

/* read, change, write under one exclusive lock; the file is written only when change succeeds */
nvmlReturn_t mig_state_change(mig_change change, void *arg)
{
    static struct mig_gpu all[MAX_GPUS];
    static char foreign[MAX_FOREIGN][160];
    int nforeign = 0, fd = open(conf.mig_state, O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    nvmlReturn_t ret;
    if (fd < 0)
        return errno == EACCES || errno == EROFS ? NVML_ERROR_NO_PERMISSION : NVML_ERROR_UNKNOWN;
    flock(fd, LOCK_EX);
    parse(fd, all, foreign, &nforeign);
    ret = change(all, arg);
    if (ret == NVML_SUCCESS)
        write_state(fd, all, foreign, nforeign);
    flock(fd, LOCK_UN);
    close(fd);
    return ret;
}

/* whether a running container holds the MIG device (GPU index, GPU instance, compute instance) */
int mig_held(unsigned int index, unsigned int gi, unsigned int ci)
{
    char uuid[NVML_DEVICE_UUID_V2_BUFFER_SIZE], path[PATH_MAX + 128];
    mig_uuid_of(index, gi, ci, uuid, sizeof uuid);
    snprintf(path, sizeof path, "%s.held/%s", conf.mig_state, uuid);
    return access(path, F_OK) == 0;
}
