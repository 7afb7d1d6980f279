/*
 * smi_mig.c - the MIG half of the lab's nvidia-smi READER of the mock (not NVIDIA's nvidia-smi):
 *
 *   nvidia-smi -L                       GPUs, each followed by its MIG devices
 *   nvidia-smi [-i IDS] -mig 0|1        set the pending MIG mode (effective after a reset)
 *   nvidia-smi -r [-i IDS]              reset: a pending MIG mode becomes current, instances go
 *   nvidia-smi mig [-i IDS] -lgip       GPU instance profiles, as the card's real listing prints
 *   nvidia-smi mig [-i IDS] -lgipp      their possible placements
 *   nvidia-smi mig [-i IDS] -lgi        the GPU instances
 *   nvidia-smi mig [-i IDS] -lci        the compute instances (the MIG user guide's table)
 * IDS: indexes, PCI bus IDs or UUIDs, comma-separated (mig-parted runs `nvidia-smi -r -i
 * <bus IDs>`, cmd/nvidia-mig-parted/util/device.go:153). Texts: NVIDIA's MIG user guide and the
 * listings of tests/sharing_corpus/mig_listings (module_utils/sharing/mig_listing.py reads them).
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "nvml.h"
#include "smi.h"

const char *nvml_mock_bus_id(unsigned int index);
nvmlReturn_t nvml_mock_reset(unsigned int index);

/* whether GPU i is named by the -i list (all when none) */
int smi_selected(const char *ids, unsigned int i)
{
    char list[1024], *tok, *save = NULL, uuid[96];
    nvmlDevice_t d;
    if (!ids)
        return 1;
    snprintf(list, sizeof list, "%s", ids);
    if (nvmlDeviceGetHandleByIndex_v2(i, &d) != NVML_SUCCESS || nvmlDeviceGetUUID(d, uuid, sizeof uuid) != NVML_SUCCESS)
        uuid[0] = '\0';
    for (tok = strtok_r(list, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
        char *end;
        unsigned long n = strtoul(tok, &end, 10);
        if ((*tok && !*end && n == i) || !strcmp(tok, uuid) || !strcasecmp(tok, nvml_mock_bus_id(i))
            || !strcasecmp(tok, nvml_mock_bus_id(i) + 4))
            return 1;
    }
    return 0;
}

/* "  MIG 1g.5gb      Device  0: (UUID: MIG-...)" under its GPU (driver 470+ -L) */
void smi_list_mig(nvmlDevice_t gpu)
{
    unsigned int k, max = 0, n = 0;
    if (nvmlDeviceGetMaxMigDeviceCount(gpu, &max) != NVML_SUCCESS)
        return;
    for (k = 0; k < max; k++) {
        nvmlDevice_t mig;
        char name[160], uuid[96], *profile;
        if (nvmlDeviceGetMigDeviceHandleByIndex(gpu, k, &mig) != NVML_SUCCESS)
            continue;
        nvmlDeviceGetName(mig, name, sizeof name);
        nvmlDeviceGetUUID(mig, uuid, sizeof uuid);
        profile = strstr(name, " MIG ");
        printf("  MIG %-11s Device %2u: (UUID: %s)\n", profile ? profile + 5 : name, n++, uuid);
    }
}

int smi_set_mig_mode(unsigned int count, const char *ids, const char *value)
{
    unsigned int i, mode = (unsigned int)atoi(value);
    int rc = 0;
    for (i = 0; i < count; i++) {
        nvmlDevice_t d;
        nvmlReturn_t status = NVML_SUCCESS, ret;
        if (!smi_selected(ids, i) || nvmlDeviceGetHandleByIndex_v2(i, &d) != NVML_SUCCESS)
            continue;
        ret = nvmlDeviceSetMigMode(d, mode, &status);
        if (ret != NVML_SUCCESS) {
            printf("Unable to %s MIG Mode for GPU %s: %s\n", mode ? "enable" : "disable", nvml_mock_bus_id(i),
                   nvmlErrorString(ret));
            rc = 3;
            continue;
        }
        printf("%s MIG Mode for GPU %s.\n", mode ? "Enabled" : "Disabled", nvml_mock_bus_id(i));
        if (status != NVML_SUCCESS)
            printf("Warning: MIG mode is in pending %s state for GPU %s:%s\nReboot the system or reset "
                   "the GPU (nvidia-smi -r) to make MIG mode effective.\n", mode ? "enable" : "disable",
                   nvml_mock_bus_id(i), nvmlErrorString(status));
    }
    printf("All done.\n");
    return rc;
}

int smi_reset(unsigned int count, const char *ids)
{
    unsigned int i;
    int rc = 0;
    for (i = 0; i < count; i++) {
        nvmlReturn_t ret;
        if (!smi_selected(ids, i))
            continue;
        ret = nvml_mock_reset(i);
        if (ret == NVML_SUCCESS)
            printf("GPU %s was successfully reset.\n", nvml_mock_bus_id(i));
        else {
            printf("GPU Reset couldn't run because GPU %s is in use by another client.\n", nvml_mock_bus_id(i));
            rc = 255;
        }
    }
    if (!rc)
        printf("All done.\n");
    return rc;
}

static int mig_gpus(unsigned int count, const char *ids, nvmlDevice_t *out, unsigned int *index)
{
    unsigned int i, n = 0, current, pending;
    for (i = 0; i < count; i++) {
        nvmlDevice_t d;
        if (!smi_selected(ids, i) || nvmlDeviceGetHandleByIndex_v2(i, &d) != NVML_SUCCESS)
            continue;
        if (nvmlDeviceGetMigMode(d, &current, &pending) != NVML_SUCCESS || current != NVML_DEVICE_MIG_ENABLE)
            continue;
        out[n] = d;
        index[n++] = i;
    }
    if (!n)
        printf("No MIG-enabled devices found.\n");
    return (int)n;
}

/* the card's profile indexes in nvidia-smi's order: by compute slices, then memory, +me after
 * (1g.5gb, 1g.5gb+me, 1g.10gb, 2g.10gb, ... as the real listings print them) */
static int profiles(nvmlDevice_t d, unsigned int *order)
{
    nvmlGpuInstanceProfileInfo_t info[NVML_GPU_INSTANCE_PROFILE_COUNT];
    unsigned int p, k, n = 0;
    for (p = 0; p < NVML_GPU_INSTANCE_PROFILE_COUNT; p++) {
        if (nvmlDeviceGetGpuInstanceProfileInfo(d, p, &info[p]) != NVML_SUCCESS)
            continue;
        for (k = n; k > 0; k--) {          /* insertion: stable, so the +me index (higher) comes after */
            nvmlGpuInstanceProfileInfo_t *o = &info[order[k - 1]];
            if (o->sliceCount < info[p].sliceCount
                || (o->sliceCount == info[p].sliceCount && o->memorySizeMB <= info[p].memorySizeMB))
                break;
            order[k] = order[k - 1];
        }
        order[k] = p;
        n++;
    }
    return (int)n;
}

static void lgip(nvmlDevice_t *d, unsigned int *index, int n)
{
    const char *rule = "+-----------------------------------------------------------------------------+";
    unsigned int order[NVML_GPU_INSTANCE_PROFILE_COUNT];
    int k, p, np;
    printf("%s\n| GPU instance profiles:                                                      |\n", rule);
    printf("| GPU   Name             ID    Instances   Memory     P2P    SM    DEC   ENC  |\n");
    printf("|                              Free/Total   GiB              CE    JPEG  OFA  |\n");
    printf("|=============================================================================|\n");
    for (k = 0; k < n; k++)
        for (p = 0, np = profiles(d[k], order); p < np; p++) {
            nvmlGpuInstanceProfileInfo_v2_t info = { .version = nvmlGpuInstanceProfileInfo_v2 };
            unsigned int left = 0;
            char counts[16];
            if (nvmlDeviceGetGpuInstanceProfileInfoV(d[k], order[p], &info) != NVML_SUCCESS)
                continue;
            nvmlDeviceGetGpuInstanceRemainingCapacity(d[k], info.id, &left);
            snprintf(counts, sizeof counts, "%u/%u", left, info.instanceCount);
            printf("| %3u  %-16s %3u     %-11s%-11.2f%-7s%-7u%-6u%-4u|\n", index[k], info.name, info.id,
                   counts, info.memorySizeMB / 1024.0, info.isP2pSupported ? "Yes" : "No",
                   info.multiprocessorCount, info.decoderCount, info.encoderCount);
            printf("|%61s%-6u%-6u%-4u|\n", "", info.copyEngineCount, info.jpegCount, info.ofaCount);
            printf("%s\n", rule);
        }
}

static void lgipp(nvmlDevice_t *d, unsigned int *index, int n)
{
    unsigned int order[NVML_GPU_INSTANCE_PROFILE_COUNT];
    int k, p, np;
    for (k = 0; k < n; k++)
        for (p = 0, np = profiles(d[k], order); p < np; p++) {
            nvmlGpuInstanceProfileInfo_t info;
            nvmlGpuInstancePlacement_t places[MAX_SMI_PLACEMENTS];
            unsigned int count = MAX_SMI_PLACEMENTS, j;
            char list[128] = "";
            if (nvmlDeviceGetGpuInstanceProfileInfo(d[k], order[p], &info) != NVML_SUCCESS
                || nvmlDeviceGetGpuInstancePossiblePlacements_v2(d[k], info.id, places, &count) != NVML_SUCCESS)
                continue;
            for (j = 0; j < count; j++)
                snprintf(list + strlen(list), sizeof list - strlen(list), "%s%u", j ? "," : "", places[j].start);
            printf("GPU %2u Profile ID %2u %s {%s}:%u\n", index[k], info.id,
                   count > 1 ? "Placements:" : "Placement :", list, count ? places[0].size : 0);
        }
}

/* every GPU instance of the GPUs d[0..n-1], by profile as -lgip orders them: fn(GPU's index, its
   profile, the instance, the table's rule) - the rows of -lgi and -lci */
typedef void (*gi_row)(unsigned int index, const nvmlGpuInstanceProfileInfo_v2_t *info, nvmlGpuInstance_t gi,
                       const char *rule);

static void each_gpu_instance(nvmlDevice_t *d, unsigned int *index, int n, gi_row fn, const char *rule)
{
    unsigned int order[NVML_GPU_INSTANCE_PROFILE_COUNT];
    int k, p, np;
    for (k = 0; k < n; k++)
        for (p = 0, np = profiles(d[k], order); p < np; p++) {
            nvmlGpuInstanceProfileInfo_v2_t info = { .version = nvmlGpuInstanceProfileInfo_v2 };
            nvmlGpuInstance_t gis[16];
            unsigned int count = 16, j;
            if (nvmlDeviceGetGpuInstanceProfileInfoV(d[k], order[p], &info) != NVML_SUCCESS
                || nvmlDeviceGetGpuInstances(d[k], info.id, gis, &count) != NVML_SUCCESS)
                continue;
            for (j = 0; j < count; j++)
                fn(index[k], &info, gis[j], rule);
        }
}

static void lgi_row(unsigned int index, const nvmlGpuInstanceProfileInfo_v2_t *info, nvmlGpuInstance_t gis,
                    const char *rule)
{
    nvmlGpuInstanceInfo_t gi;
    char place[16];
    nvmlGpuInstanceGetInfo(gis, &gi);
    snprintf(place, sizeof place, "%u:%u", gi.placement.start, gi.placement.size);
    printf("| %3u  %-16s %5u    %5u      %7s     |\n%s\n", index, info->name, info->id, gi.id, place, rule);
}

static void lgi(nvmlDevice_t *d, unsigned int *index, int n)
{
    const char *rule = "+-------------------------------------------------------+";
    printf("%s\n| GPU instances:                                        |\n", rule);
    printf("| GPU   Name             Profile  Instance   Placement  |\n");
    printf("|                          ID       ID       Start:Size |\n");
    printf("|=======================================================|\n");
    each_gpu_instance(d, index, n, lgi_row, rule);
}

/* one GPU instance's compute instances, rows of `nvidia-smi mig -lci` */
static void lci_rows(unsigned int index, const nvmlGpuInstanceProfileInfo_v2_t *info, nvmlGpuInstance_t gis,
                     const char *rule)
{
    nvmlGpuInstanceInfo_t gi;
    unsigned int cp;
    (void)info;
    nvmlGpuInstanceGetInfo(gis, &gi);
    for (cp = 0; cp < NVML_COMPUTE_INSTANCE_PROFILE_COUNT; cp++) {
        nvmlComputeInstanceProfileInfo_v2_t ci_info = { .version = nvmlComputeInstanceProfileInfo_v2 };
        nvmlComputeInstance_t cis[8];
        unsigned int ncis = 8, c;
        if (nvmlGpuInstanceGetComputeInstanceProfileInfoV(gis, cp, NVML_COMPUTE_INSTANCE_ENGINE_PROFILE_SHARED,
                                                          &ci_info) != NVML_SUCCESS
            || nvmlGpuInstanceGetComputeInstances(gis, cp, cis, &ncis) != NVML_SUCCESS)
            continue;
        for (c = 0; c < ncis; c++) {
            nvmlComputeInstanceInfo_t ci;
            char place[16];
            nvmlComputeInstanceGetInfo_v2(cis[c], &ci);
            snprintf(place, sizeof place, "%u:%u", ci.placement.start, ci.placement.size);
            printf("| %3u   %5u       %-16s %5u     %5u      %7s     |\n%s\n", index, gi.id, ci_info.name,
                   ci_info.id, ci.id, place, rule);
        }
    }
}

/* the compute instances of every GPU instance, as the MIG user guide prints `nvidia-smi mig -lci` */
static void lci(nvmlDevice_t *d, unsigned int *index, int n)
{
    const char *rule = "+--------------------------------------------------------------------+";
    printf("%s\n| Compute instances:                                                 |\n", rule);
    printf("| GPU     GPU       Name             Profile   Instance   Placement  |\n");
    printf("|       Instance                       ID        ID       Start:Size |\n");
    printf("|         ID                                                         |\n");
    printf("|====================================================================|\n");
    each_gpu_instance(d, index, n, lci_rows, rule);
}

int smi_mig(unsigned int count, const char *ids, const char *what)
{
    nvmlDevice_t d[64];
    unsigned int index[64];
    int n = mig_gpus(count, ids, d, index);
    if (!n)
        return 6;                          /* nvidia-smi(1): 6 - a query found nothing */
    if (!strcmp(what, "-lgip"))
        lgip(d, index, n);
    else if (!strcmp(what, "-lgipp"))
        lgipp(d, index, n);
    else if (!strcmp(what, "-lci"))
        lci(d, index, n);
    else
        lgi(d, index, n);
    return 0;
}
