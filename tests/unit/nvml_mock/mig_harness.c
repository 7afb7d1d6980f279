/*
 * mig_harness.c - drives the mock NVML library's MIG calls as go-nvml does (the same C calls,
 * the same structs of go-nvml's nvml.h); tests/unit/nvml_mock/test_nvml_mock_mig.py builds it.
 * One line of output per command; every line starts with the NVML return code.
 *
 *   mode GPU 0|1            nvmlDeviceSetMigMode         -> ret activationStatus
 *   getmode GPU             nvmlDeviceGetMigMode         -> ret current pending
 *   cgi GPU PROFILE_ID [S]  nvmlDeviceCreateGpuInstance(WithPlacement start S) + a full compute
 *                           instance                     -> ret GI_ID start size ci-ret
 *   dci GPU GI CI           nvmlComputeInstanceDestroy   -> ret
 *   dgi GPU GI              nvmlGpuInstanceDestroy       -> ret
 *   list                    every MIG device             -> 0 gpu index uuid gi ci memMiB "name"
 *   uuid UUID               nvmlDeviceGetHandleByUUID    -> ret is_mig parent gi ci
 *   profile GPU INDEX       nvmlDeviceGetGpuInstanceProfileInfo -> ret id instances slices memMiB
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nvml.h"

static unsigned int num(const char *s) { return (unsigned int)strtoul(s, NULL, 0); }

static nvmlDevice_t gpu(const char *s)
{
    nvmlDevice_t d = { 0 };
    nvmlDeviceGetHandleByIndex_v2(num(s), &d);
    return d;
}

static int cgi(char **a, int n)
{
    nvmlDevice_t d = gpu(a[0]);
    nvmlGpuInstance_t gi;
    nvmlGpuInstanceInfo_t info = { 0 };
    nvmlComputeInstance_t ci;
    nvmlGpuInstanceProfileInfo_t p;
    nvmlComputeInstanceProfileInfo_t cp;
    nvmlReturn_t ret, cret = NVML_ERROR_UNKNOWN;
    unsigned int k;
    if (n > 2) {
        nvmlGpuInstancePlacement_t place = { num(a[2]), 0 };
        nvmlGpuInstancePlacement_t all[8];
        unsigned int count = 8;
        nvmlDeviceGetGpuInstancePossiblePlacements_v2(d, num(a[1]), all, &count);
        place.size = count ? all[0].size : 0;
        ret = nvmlDeviceCreateGpuInstanceWithPlacement(d, num(a[1]), &place, &gi);
    } else
        ret = nvmlDeviceCreateGpuInstance(d, num(a[1]), &gi);
    if (ret == NVML_SUCCESS) {
        nvmlGpuInstanceGetInfo(gi, &info);
        for (k = 0; k < NVML_GPU_INSTANCE_PROFILE_COUNT; k++)
            if (nvmlDeviceGetGpuInstanceProfileInfo(d, k, &p) == NVML_SUCCESS && p.id == info.profileId)
                break;
        /* the compute instance of the whole GPU instance, as mig-parted creates it */
        for (k = NVML_COMPUTE_INSTANCE_PROFILE_COUNT; k-- > 0;)
            if (nvmlGpuInstanceGetComputeInstanceProfileInfo(gi, k, 0, &cp) == NVML_SUCCESS && cp.sliceCount == p.sliceCount)
                break;
        cret = nvmlGpuInstanceCreateComputeInstance(gi, cp.id, &ci);
    }
    printf("%d %u %u %u %d\n", ret, info.id, info.placement.start, info.placement.size, cret);
    return 2 + (n > 2);
}

static void list(void)
{
    unsigned int count = 0, i, k, max;
    nvmlDeviceGetCount_v2(&count);
    for (i = 0; i < count; i++) {
        nvmlDevice_t d = gpu("0"), m, parent;
        nvmlDeviceGetHandleByIndex_v2(i, &d);
        if (nvmlDeviceGetMaxMigDeviceCount(d, &max) != NVML_SUCCESS)
            continue;
        for (k = 0; k < max; k++) {
            char uuid[96], name[160];
            unsigned int g, c, is_mig = 0, pi = 99;
            nvmlMemory_t mem;
            nvmlDeviceAttributes_t at;
            if (nvmlDeviceGetMigDeviceHandleByIndex(d, k, &m) != NVML_SUCCESS)
                continue;
            nvmlDeviceGetUUID(m, uuid, sizeof uuid);
            nvmlDeviceGetName(m, name, sizeof name);
            nvmlDeviceGetGpuInstanceId(m, &g);
            nvmlDeviceGetComputeInstanceId(m, &c);
            nvmlDeviceGetMemoryInfo(m, &mem);
            nvmlDeviceGetAttributes_v2(m, &at);
            nvmlDeviceIsMigDeviceHandle(m, &is_mig);
            nvmlDeviceGetDeviceHandleFromMigDeviceHandle(m, &parent);
            nvmlDeviceGetIndex(parent, &pi);
            printf("0 %u %u %s %u %u %llu %u %u %u \"%s\"\n", i, k, uuid, g, c, mem.total >> 20,
                   at.memorySizeMB == mem.total >> 20, is_mig, pi, name);
        }
    }
}

int main(int argc, char **argv)
{
    int i = 1;
    nvmlReturn_t ret = nvmlInit_v2();
    if (ret != NVML_SUCCESS) {
        printf("init %d\n", ret);
        return 1;
    }
    while (i < argc) {
        const char *cmd = argv[i++];
        char **a = argv + i;
        if (!strcmp(cmd, "mode")) {
            nvmlReturn_t status = NVML_SUCCESS;
            ret = nvmlDeviceSetMigMode(gpu(a[0]), num(a[1]), &status);
            printf("%d %d\n", ret, status);
            i += 2;
        } else if (!strcmp(cmd, "getmode")) {
            unsigned int c = 9, p = 9;
            ret = nvmlDeviceGetMigMode(gpu(a[0]), &c, &p);
            printf("%d %u %u\n", ret, c, p);
            i += 1;
        } else if (!strcmp(cmd, "cgi") || !strcmp(cmd, "cgip")) {
            i += cgi(a, !strcmp(cmd, "cgip") ? 3 : 2);
        } else if (!strcmp(cmd, "dci") || !strcmp(cmd, "dgi")) {
            nvmlGpuInstance_t gi;
            nvmlComputeInstance_t ci;
            ret = nvmlDeviceGetGpuInstanceById(gpu(a[0]), num(a[1]), &gi);
            if (ret == NVML_SUCCESS && !strcmp(cmd, "dci"))
                ret = nvmlGpuInstanceGetComputeInstanceById(gi, num(a[2]), &ci);
            if (ret == NVML_SUCCESS)
                ret = !strcmp(cmd, "dci") ? nvmlComputeInstanceDestroy(ci) : nvmlGpuInstanceDestroy(gi);
            printf("%d %s\n", ret, nvmlErrorString(ret));
            i += !strcmp(cmd, "dci") ? 3 : 2;
        } else if (!strcmp(cmd, "list")) {
            list();
        } else if (!strcmp(cmd, "uuid")) {
            nvmlDevice_t d, parent;
            unsigned int is_mig = 0, g = 99, c = 99, pi = 99;
            ret = nvmlDeviceGetHandleByUUID(a[0], &d);
            if (ret == NVML_SUCCESS) {
                nvmlDeviceIsMigDeviceHandle(d, &is_mig);
                if (is_mig) {
                    nvmlDeviceGetGpuInstanceId(d, &g);
                    nvmlDeviceGetComputeInstanceId(d, &c);
                    nvmlDeviceGetDeviceHandleFromMigDeviceHandle(d, &parent);
                    nvmlDeviceGetIndex(parent, &pi);
                }
            }
            printf("%d %u %u %u %u\n", ret, is_mig, pi, g, c);
            i += 1;
        } else if (!strcmp(cmd, "profile")) {
            nvmlGpuInstanceProfileInfo_t p = { 0 };
            ret = nvmlDeviceGetGpuInstanceProfileInfo(gpu(a[0]), num(a[1]), &p);
            printf("%d %u %u %u %llu\n", ret, p.id, p.instanceCount, p.sliceCount, p.memorySizeMB);
            i += 2;
        } else {
            printf("unknown command %s\n", cmd);
            return 2;
        }
    }
    nvmlShutdown();
    return 0;
}
