/*
 * devices.c - the lab's MOCK of NVIDIA's management library (libnvidia-ml.so.1): Init and
 * Shutdown, error strings, the system calls, GPU handles and what one GPU answers.
 *
 * This is not NVIDIA's code and there is no GPU behind it. It exists so that NVIDIA's own,
 * unmodified binaries (the k8s device plugin, mig-parted, go-nvml/go-nvlib inside them) can run
 * on a lab node without a GPU. README.md says what it imitates; config.c reads the configuration.
 *
 * Faults that decide Init (NVML's documented return codes, nvml.h of go-nvml, the version
 * NVIDIA's device plugin pins):
 *   version-mismatch   nvmlInit -> NVML_ERROR_LIB_RM_VERSION_MISMATCH (18), as after a kernel
 *                      update whose driver module does not match the user-space library
 *   driver-not-loaded  nvmlInit -> NVML_ERROR_DRIVER_NOT_LOADED (9)
 *   library-gone       nvmlInit -> NVML_ERROR_LIBRARY_NOT_FOUND (12): what go-nvml returns when
 *                      dlopen finds no libnvidia-ml.so.1 (the real "gone" is removing the file)
 *   lost = N           GPU N (host index): handle and queries -> NVML_ERROR_GPU_IS_LOST (15)
 *
 * A MIG device handle (mig.c) answers the queries of its parent GPU here, except those mig.c
 * names: name, UUID, memory, attributes.
 * Every nvml* function go-nvml references is exported: those not written in these files are
 * generated stubs (gen_stubs.py) that return NVML_ERROR_NOT_SUPPORTED.
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "mock.h"

static nvmlReturn_t start(void)
{
    nvmlReturn_t ret = NVML_SUCCESS;
    pthread_mutex_lock(&mock_lock);
    refresh();
    if (!strcmp(conf.fault, "version-mismatch"))
        ret = NVML_ERROR_LIB_RM_VERSION_MISMATCH;
    else if (!strcmp(conf.fault, "driver-not-loaded"))
        ret = NVML_ERROR_DRIVER_NOT_LOADED;
    else if (!strcmp(conf.fault, "library-gone"))
        ret = NVML_ERROR_LIBRARY_NOT_FOUND;
    else if (!init_count && !load_card())  /* GPUs are enumerated by the first Init only */
        ret = NVML_ERROR_UNKNOWN;          /* a card the table does not know */
    else
        init_count++;
    pthread_mutex_unlock(&mock_lock);
    return ret;
}

MOCK_EXPORT nvmlReturn_t nvmlInit_v2(void) { return start(); }
MOCK_EXPORT nvmlReturn_t nvmlInit(void) { return start(); }
MOCK_EXPORT nvmlReturn_t nvmlInitWithFlags(unsigned int flags) { (void)flags; return start(); }

MOCK_EXPORT nvmlReturn_t nvmlShutdown(void)
{
    nvmlReturn_t ret = NVML_SUCCESS;
    pthread_mutex_lock(&mock_lock);
    if (init_count > 0)
        init_count--;
    else
        ret = NVML_ERROR_UNINITIALIZED;
    pthread_mutex_unlock(&mock_lock);
    return ret;
}

/* the GPU behind a handle (a MIG device's parent); NULL with *ret set when there is none or
 * it is lost */
struct gpu *gpu_of(nvmlDevice_t device, nvmlReturn_t *ret)
{
    struct nvmlDevice_st *d = device.handle;
    pthread_mutex_lock(&mock_lock);
    refresh();
    if (!init_count)
        *ret = NVML_ERROR_UNINITIALIZED;
    else if (!d || ((d < devices || d >= devices + ngpus) && !mig_handle_valid(d)))
        *ret = NVML_ERROR_INVALID_ARGUMENT;
    else if (conf.lost[gpus[d->index].minor])
        *ret = NVML_ERROR_GPU_IS_LOST;
    else
        *ret = NVML_SUCCESS;
    pthread_mutex_unlock(&mock_lock);
    return *ret == NVML_SUCCESS ? &gpus[d->index] : NULL;
}

nvmlReturn_t copy_string(char *out, unsigned int length, const char *value)
{
    if (!out)
        return NVML_ERROR_INVALID_ARGUMENT;
    if (strlen(value) + 1 > length)
        return NVML_ERROR_INSUFFICIENT_SIZE;
    memcpy(out, value, strlen(value) + 1);
    return NVML_SUCCESS;
}

int initialized(void)
{
    int n;
    pthread_mutex_lock(&mock_lock);
    n = init_count;
    pthread_mutex_unlock(&mock_lock);
    return n > 0;
}

MOCK_EXPORT const char *nvmlErrorString(nvmlReturn_t result)
{
    switch (result) {
    case NVML_SUCCESS: return "Success";
    case NVML_ERROR_UNINITIALIZED: return "Uninitialized";
    case NVML_ERROR_INVALID_ARGUMENT: return "Invalid Argument";
    case NVML_ERROR_NOT_SUPPORTED: return "Not Supported";
    case NVML_ERROR_NO_PERMISSION: return "Insufficient Permissions";
    case NVML_ERROR_NOT_FOUND: return "Not Found";
    case NVML_ERROR_INSUFFICIENT_SIZE: return "Insufficient Size";
    case NVML_ERROR_DRIVER_NOT_LOADED: return "Driver Not Loaded";
    case NVML_ERROR_TIMEOUT: return "Timeout";
    /* only the library-gone fault returns this: the words go-nvml prints when dlopen finds no
     * library (its defaultErrorStringFunc, return.go), so a consumer says what it says when the
     * driver root has no libnvidia-ml.so.1 */
    case NVML_ERROR_LIBRARY_NOT_FOUND: return "ERROR_LIBRARY_NOT_FOUND";
    case NVML_ERROR_GPU_IS_LOST: return "GPU is lost";
    case NVML_ERROR_LIB_RM_VERSION_MISMATCH: return "Driver/library version mismatch";
    /* nvidia-smi prints these for MIG: "Unable to destroy compute instance ...: In use by another client" */
    case NVML_ERROR_IN_USE: return "In use by another client";
    case NVML_ERROR_INSUFFICIENT_RESOURCES: return "Insufficient Resources";
    case NVML_ERROR_RESET_REQUIRED: return "GPU requires reset";
    case NVML_ERROR_ARGUMENT_VERSION_MISMATCH: return "Argument version mismatch";
    default: return "Unknown Error";
    }
}

/* ---- system ---- */
MOCK_EXPORT nvmlReturn_t nvmlSystemGetDriverVersion(char *version, unsigned int length)
{
    char v[32];
    if (!initialized())
        return NVML_ERROR_UNINITIALIZED;
    pthread_mutex_lock(&mock_lock);
    snprintf(v, sizeof v, "%s", conf.driver_version);
    pthread_mutex_unlock(&mock_lock);
    return copy_string(version, length, v);
}

MOCK_EXPORT nvmlReturn_t nvmlSystemGetNVMLVersion(char *version, unsigned int length)
{
    char v[48];
    pthread_mutex_lock(&mock_lock);
    refresh();
    snprintf(v, sizeof v, "%d.%s", conf.cuda_version / 1000, conf.library_version);
    pthread_mutex_unlock(&mock_lock);
    return copy_string(version, length, v);
}

/* nvidia-smi prints this after a version mismatch: "NVML library version: 550.127" */
MOCK_EXPORT const char *nvml_mock_library_version(void)
{
    static char v[32];
    pthread_mutex_lock(&mock_lock);
    refresh();
    snprintf(v, sizeof v, "%s", conf.library_version);
    pthread_mutex_unlock(&mock_lock);
    return v;
}

MOCK_EXPORT nvmlReturn_t nvmlSystemGetCudaDriverVersion(int *cudaDriverVersion)
{
    if (!cudaDriverVersion)
        return NVML_ERROR_INVALID_ARGUMENT;
    pthread_mutex_lock(&mock_lock);
    refresh();
    *cudaDriverVersion = conf.cuda_version;
    pthread_mutex_unlock(&mock_lock);
    return NVML_SUCCESS;
}

MOCK_EXPORT nvmlReturn_t nvmlSystemGetCudaDriverVersion_v2(int *cudaDriverVersion)
{
    return nvmlSystemGetCudaDriverVersion(cudaDriverVersion);
}

/* ---- handles ---- */
MOCK_EXPORT nvmlReturn_t nvmlDeviceGetCount_v2(unsigned int *deviceCount)
{
    if (!deviceCount)
        return NVML_ERROR_INVALID_ARGUMENT;
    if (!initialized())
        return NVML_ERROR_UNINITIALIZED;
    *deviceCount = ngpus;
    return NVML_SUCCESS;
}

MOCK_EXPORT nvmlReturn_t nvmlDeviceGetCount(unsigned int *deviceCount)
{
    return nvmlDeviceGetCount_v2(deviceCount);
}

MOCK_EXPORT nvmlReturn_t nvmlDeviceGetHandleByIndex_v2(unsigned int index, nvmlDevice_t *device)
{
    nvmlReturn_t ret;
    if (!device)
        return NVML_ERROR_INVALID_ARGUMENT;
    if (!initialized())
        return NVML_ERROR_UNINITIALIZED;
    if (index >= ngpus)
        return NVML_ERROR_INVALID_ARGUMENT;
    device->handle = &devices[index];
    gpu_of(*device, &ret);
    return ret;
}

MOCK_EXPORT nvmlReturn_t nvmlDeviceGetHandleByIndex(unsigned int index, nvmlDevice_t *device)
{
    return nvmlDeviceGetHandleByIndex_v2(index, device);
}

MOCK_EXPORT nvmlReturn_t nvmlDeviceGetHandleByUUID(const char *uuid, nvmlDevice_t *device)
{
    unsigned int i;
    if (!uuid || !device)
        return NVML_ERROR_INVALID_ARGUMENT;
    if (!initialized())
        return NVML_ERROR_UNINITIALIZED;
    for (i = 0; i < ngpus; i++)
        if (!strcmp(gpus[i].uuid, uuid))
            return nvmlDeviceGetHandleByIndex_v2(i, device);
    if (!strncmp(uuid, "MIG-", 4))
        return mig_handle_by_uuid(uuid, device);   /* MIG devices resolve by UUID too */
    return NVML_ERROR_NOT_FOUND;
}

MOCK_EXPORT nvmlReturn_t nvmlDeviceGetHandleByPciBusId_v2(const char *pciBusId, nvmlDevice_t *device)
{
    unsigned int i;
    char id[32], legacy[32];
    if (!pciBusId || !device)
        return NVML_ERROR_INVALID_ARGUMENT;
    if (!initialized())
        return NVML_ERROR_UNINITIALIZED;
    for (i = 0; i < ngpus; i++) {
        bus_id(i, id, sizeof id, 0);
        bus_id(i, legacy, sizeof legacy, 1);
        if (!strcasecmp(id, pciBusId) || !strcasecmp(legacy, pciBusId))
            return nvmlDeviceGetHandleByIndex_v2(i, device);
    }
    return NVML_ERROR_NOT_FOUND;
}

MOCK_EXPORT nvmlReturn_t nvmlDeviceGetHandleByPciBusId(const char *pciBusId, nvmlDevice_t *device)
{
    return nvmlDeviceGetHandleByPciBusId_v2(pciBusId, device);
}

MOCK_EXPORT nvmlReturn_t nvmlDeviceGetHandleBySerial(const char *serial, nvmlDevice_t *device)
{
    unsigned int i;
    if (!serial || !device)
        return NVML_ERROR_INVALID_ARGUMENT;
    if (!initialized())
        return NVML_ERROR_UNINITIALIZED;
    for (i = 0; i < ngpus; i++)
        if (!strcmp(gpus[i].serial, serial))
            return nvmlDeviceGetHandleByIndex_v2(i, device);
    return NVML_ERROR_NOT_FOUND;
}

/* ---- one GPU ---- */
MOCK_EXPORT nvmlReturn_t nvmlDeviceGetName(nvmlDevice_t device, char *name, unsigned int length)
{
    GPU_OR_RETURN(device, g);
    (void)g;
    if (device.handle->mig)
        return mig_name(device.handle, name, length);
    return copy_string(name, length, card.name);
}

MOCK_EXPORT nvmlReturn_t nvmlDeviceGetUUID(nvmlDevice_t device, char *uuid, unsigned int length)
{
    GPU_OR_RETURN(device, g);
    if (device.handle->mig)
        return mig_uuid(device.handle, uuid, length);
    return copy_string(uuid, length, g->uuid);
}

MOCK_EXPORT nvmlReturn_t nvmlDeviceGetSerial(nvmlDevice_t device, char *serial, unsigned int length)
{
    GPU_OR_RETURN(device, g);
    return copy_string(serial, length, g->serial);
}

MOCK_EXPORT nvmlReturn_t nvmlDeviceGetIndex(nvmlDevice_t device, unsigned int *index)
{
    GPU_OR_RETURN(device, g);
    if (!index)
        return NVML_ERROR_INVALID_ARGUMENT;
    *index = (unsigned int)(g - gpus);
    return NVML_SUCCESS;
}

/* /dev/nvidia<minor>: the host's index */
MOCK_EXPORT nvmlReturn_t nvmlDeviceGetMinorNumber(nvmlDevice_t device, unsigned int *minorNumber)
{
    GPU_OR_RETURN(device, g);
    if (!minorNumber)
        return NVML_ERROR_INVALID_ARGUMENT;
    *minorNumber = g->minor;
    return NVML_SUCCESS;
}

static nvmlReturn_t pci_info(nvmlDevice_t device, nvmlPciInfo_t *pci)
{
    GPU_OR_RETURN(device, g);
    if (!pci)
        return NVML_ERROR_INVALID_ARGUMENT;
    memset(pci, 0, sizeof *pci);
    pci->domain = 0;
    pci->bus = g->bus;
    pci->device = 0;
    /* device ID << 16 | NVIDIA's vendor ID (0x20B010DE: A100-SXM4-40GB), as mig-parted reads it */
    pci->pciDeviceId = card.pci_device_id << 16 | 0x10DE;
    pci->pciSubSystemId = pci->pciDeviceId;
    bus_id((unsigned int)(g - gpus), pci->busId, sizeof pci->busId, 0);
    bus_id((unsigned int)(g - gpus), pci->busIdLegacy, sizeof pci->busIdLegacy, 1);
    return NVML_SUCCESS;
}

MOCK_EXPORT nvmlReturn_t nvmlDeviceGetPciInfo_v3(nvmlDevice_t device, nvmlPciInfo_t *pci) { return pci_info(device, pci); }
MOCK_EXPORT nvmlReturn_t nvmlDeviceGetPciInfo_v2(nvmlDevice_t device, nvmlPciInfo_t *pci) { return pci_info(device, pci); }
MOCK_EXPORT nvmlReturn_t nvmlDeviceGetPciInfo(nvmlDevice_t device, nvmlPciInfo_t *pci) { return pci_info(device, pci); }

MOCK_EXPORT nvmlReturn_t nvmlDeviceGetMemoryInfo(nvmlDevice_t device, nvmlMemory_t *memory)
{
    unsigned long long mib = card.memory_mib;
    GPU_OR_RETURN(device, g);
    if (!memory)
        return NVML_ERROR_INVALID_ARGUMENT;
    if (device.handle->mig && mig_memory_mib(device.handle, &mib) != NVML_SUCCESS)
        return NVML_ERROR_NOT_FOUND;       /* its instance was destroyed */
    memory->total = mib * 1024ULL * 1024ULL;
    memory->used = 0;
    memory->free = memory->total;
    return NVML_SUCCESS;
}

MOCK_EXPORT nvmlReturn_t nvmlDeviceGetMemoryInfo_v2(nvmlDevice_t device, nvmlMemory_v2_t *memory)
{
    unsigned long long mib = card.memory_mib;
    GPU_OR_RETURN(device, g);
    if (!memory)
        return NVML_ERROR_INVALID_ARGUMENT;
    if (device.handle->mig && mig_memory_mib(device.handle, &mib) != NVML_SUCCESS)
        return NVML_ERROR_NOT_FOUND;       /* its instance was destroyed */
    memory->total = mib * 1024ULL * 1024ULL;
    memory->reserved = 0;
    memory->used = 0;
    memory->free = memory->total;
    return NVML_SUCCESS;
}

MOCK_EXPORT nvmlReturn_t nvmlDeviceGetCudaComputeCapability(nvmlDevice_t device, int *major, int *minor)
{
    GPU_OR_RETURN(device, g);
    if (!major || !minor)
        return NVML_ERROR_INVALID_ARGUMENT;
    (void)g;
    *major = card.cc_major;
    *minor = card.cc_minor;
    return NVML_SUCCESS;
}

MOCK_EXPORT nvmlReturn_t nvmlDeviceGetArchitecture(nvmlDevice_t device, nvmlDeviceArchitecture_t *arch)
{
    GPU_OR_RETURN(device, g);
    if (!arch)
        return NVML_ERROR_INVALID_ARGUMENT;
    (void)g;
    /* compute capability 8.x Ampere (8.9 Ada), 9.x Hopper, 10.x Blackwell */
    if (card.cc_major == 8)
        *arch = card.cc_minor == 9 ? NVML_DEVICE_ARCH_ADA : NVML_DEVICE_ARCH_AMPERE;
    else if (card.cc_major == 9)
        *arch = NVML_DEVICE_ARCH_HOPPER;
    else if (card.cc_major == 10)
        *arch = NVML_DEVICE_ARCH_BLACKWELL;
    else
        *arch = NVML_DEVICE_ARCH_UNKNOWN;
    return NVML_SUCCESS;
}

MOCK_EXPORT nvmlReturn_t nvmlDeviceGetBrand(nvmlDevice_t device, nvmlBrandType_t *type)
{
    GPU_OR_RETURN(device, g);
    (void)g;
    if (!type)
        return NVML_ERROR_INVALID_ARGUMENT;
    *type = NVML_BRAND_NVIDIA;
    return NVML_SUCCESS;
}

MOCK_EXPORT nvmlReturn_t nvmlDeviceGetAttributes_v2(nvmlDevice_t device, nvmlDeviceAttributes_t *attributes)
{
    GPU_OR_RETURN(device, g);
    if (!attributes)
        return NVML_ERROR_INVALID_ARGUMENT;
    (void)g;
    if (device.handle->mig)
        return mig_attributes(device.handle, attributes);
    memset(attributes, 0, sizeof *attributes);
    attributes->memorySizeMB = card.memory_mib;
    return NVML_SUCCESS;
}

MOCK_EXPORT nvmlReturn_t nvmlDeviceGetAttributes(nvmlDevice_t device, nvmlDeviceAttributes_t *attributes)
{
    return nvmlDeviceGetAttributes_v2(device, attributes);
}

MOCK_EXPORT nvmlReturn_t nvmlDeviceGetPersistenceMode(nvmlDevice_t device, nvmlEnableState_t *mode)
{
    GPU_OR_RETURN(device, g);
    (void)g;
    if (!mode)
        return NVML_ERROR_INVALID_ARGUMENT;
    *mode = NVML_FEATURE_ENABLED;
    return NVML_SUCCESS;
}

MOCK_EXPORT nvmlReturn_t nvmlDeviceGetComputeMode(nvmlDevice_t device, nvmlComputeMode_t *mode)
{
    GPU_OR_RETURN(device, g);
    (void)g;
    if (!mode)
        return NVML_ERROR_INVALID_ARGUMENT;
    *mode = NVML_COMPUTEMODE_DEFAULT;
    return NVML_SUCCESS;
}

/* GPUs 2k and 2k+1 share a PCIe switch, the others meet at the CPU (the NUMA node) */
MOCK_EXPORT nvmlReturn_t nvmlDeviceGetTopologyCommonAncestor(nvmlDevice_t device1, nvmlDevice_t device2, nvmlGpuTopologyLevel_t *pathInfo)
{
    nvmlReturn_t ret;
    struct gpu *a = gpu_of(device1, &ret), *b;
    if (!a)
        return ret;
    b = gpu_of(device2, &ret);
    if (!b)
        return ret;
    if (!pathInfo)
        return NVML_ERROR_INVALID_ARGUMENT;
    if (a == b)
        *pathInfo = NVML_TOPOLOGY_INTERNAL;
    else if ((a - gpus) / 2 == (b - gpus) / 2)
        *pathInfo = NVML_TOPOLOGY_SINGLE;
    else
        *pathInfo = NVML_TOPOLOGY_NODE;
    return NVML_SUCCESS;
}

/* ---- for the nvidia-smi reader: the bus ID of a GPU even when it is lost ---- */
MOCK_EXPORT const char *nvml_mock_bus_id(unsigned int index)
{
    static char id[32];
    if (index >= ngpus)
        return "";
    bus_id(index, id, sizeof id, 0);
    return id;
}
