/*
 * nvml_mock.c - the lab's MOCK of NVIDIA's management library (libnvidia-ml.so.1).
 *
 * This is not NVIDIA's code and there is no GPU behind it. It exists so that NVIDIA's own,
 * unmodified binaries (the k8s device plugin, go-nvml/go-nvlib inside them) can run on a lab
 * node without a GPU. It answers from a card table and a configuration file:
 *
 *   configuration  $NVML_MOCK_CONFIG, else nvml-mock.conf beside this library (the folder the
 *                  dynamic loader found it in), else built-in defaults. "key = value" lines,
 *                  '#' comments:
 *     card = A100-SXM4-40GB           key of a row of the card table (default A100-SXM4-40GB)
 *     count = 4                       GPUs (default 4; at most 16)
 *     cards = /path/cards.tsv         card table (default nvml-mock-cards.tsv beside the library)
 *     driver_version = 550.54.15      what the kernel module "is" (default 550.54.15)
 *     cuda_version = 12.4             CUDA driver API version (default 12.4)
 *     uuid_seed = gpu-incident-lab    UUIDs are derived from seed, card and index
 *     fault = none | version-mismatch | driver-not-loaded | library-gone
 *     library_version = 550.127.05    the library's own version, printed by nvidia-smi after a
 *                                     version mismatch (default: driver_version)
 *     lost = 1,3                      GPUs (indexes) that fell off the bus
 *     xid = 1 79                      one Xid event on GPU 1 (index or UUID), code 79; repeatable
 *     device_nodes = /dev             list only the GPUs whose /dev/nvidia<minor> exists, as the
 *                                     driver shows a container only the GPUs it was given
 *                                     (also $NVML_MOCK_DEVICE_NODES; the CDI spec sets it)
 *   Init reads it (faults that decide Init: version-mismatch, driver-not-loaded, library-gone);
 *   every later call re-reads it when the file changed (lost GPUs, Xid events), so a drill
 *   writes the file and a running device plugin sees the Xid on its next EventSetWait.
 *
 * What a fault does (NVML's documented return codes, nvml.h of go-nvml, the version NVIDIA's
 * device plugin pins):
 *   version-mismatch   nvmlInit -> NVML_ERROR_LIB_RM_VERSION_MISMATCH (18), as after a kernel
 *                      update whose driver module does not match the user-space library
 *   driver-not-loaded  nvmlInit -> NVML_ERROR_DRIVER_NOT_LOADED (9)
 *   library-gone       nvmlInit -> NVML_ERROR_LIBRARY_NOT_FOUND (12): what go-nvml returns when
 *                      dlopen finds no libnvidia-ml.so.1 (the real "gone" is removing the file)
 *   (GPU indexes in lost/xid are the host's: minor numbers, as in /dev/nvidia<minor>)
 *   lost = N           GPU N: handle and queries -> NVML_ERROR_GPU_IS_LOST (15); an event set
 *                      with GPU N registered delivers one Xid 79 ("GPU has fallen off the bus")
 *   xid = N CODE       an event set with GPU N registered for Xid events delivers it once
 *
 * Every nvml* function go-nvml references is exported: those not written here are generated
 * stubs (gen_stubs.py) that return NVML_ERROR_NOT_SUPPORTED.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "nvml.h"

#define MOCK_EXPORT __attribute__((visibility("default")))
#define MAX_GPUS 16
#define MAX_XIDS 256
#define MAX_SETS 64

/* found by the nvidia-smi reader in a library file: this library is the lab's mock */
MOCK_EXPORT const char nvml_mock_identity[] = "NVML-MOCK gpu-incident-lab: not NVIDIA's libnvidia-ml";

struct nvmlDevice_st { unsigned int index; };
struct nvmlEventSet_st {
    int used;
    unsigned long long mask[MAX_GPUS];     /* registered event types per GPU */
    int xids_delivered;                    /* xid lines of the config already delivered */
    int lost_reported[MAX_GPUS];
};

struct xid { char gpu[96]; unsigned long long code; };

struct config {
    char card[64];
    unsigned int count;
    char cards[PATH_MAX];
    char driver_version[32];
    char library_version[32];
    int cuda_version;                      /* 12040 for 12.4 */
    char uuid_seed[128];
    char fault[32];
    int lost[MAX_GPUS];
    char device_nodes[256];
    struct xid xids[MAX_XIDS];
    int nxids;
};

struct gpu {
    char name[96];
    unsigned long long memory_mib;
    int cc_major, cc_minor;
    char uuid[NVML_DEVICE_UUID_V2_BUFFER_SIZE];
    char serial[32];
    unsigned int bus;
    unsigned int minor;                    /* the host's index: /dev/nvidia<minor> */
};

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static struct config conf;                 /* as last read */
static struct stat conf_stat;              /* of the file last read (st_ino 0: none) */
static int init_count;
static unsigned int ngpus;
static struct gpu gpus[MAX_GPUS];
static struct nvmlDevice_st devices[MAX_GPUS];
static struct nvmlEventSet_st sets[MAX_SETS];
static char libdir[PATH_MAX - 64];            /* folder of this library (or set by the reader) */

/* DGX A100's GPU buses (nvidia-smi -L on a DGX A100 lists 07, 0F, 47, 4E, 87, 90, B7, BD) */
static const unsigned int dgx_buses[] = { 0x07, 0x0F, 0x47, 0x4E, 0x87, 0x90, 0xB7, 0xBD };

MOCK_EXPORT void nvml_mock_set_libdir(const char *dir)
{
    snprintf(libdir, sizeof libdir, "%s", dir);
}

static void find_libdir(void)
{
    Dl_info info;
    if (libdir[0])
        return;
    if (dladdr((void *)&nvml_mock_set_libdir, &info) && info.dli_fname && strchr(info.dli_fname, '/')) {
        snprintf(libdir, sizeof libdir, "%s", info.dli_fname);
        *strrchr(libdir, '/') = '\0';
    }
}

static void config_path(char *out, size_t n)
{
    const char *env = getenv("NVML_MOCK_CONFIG");
    find_libdir();
    if (env && *env)
        snprintf(out, n, "%s", env);
    else
        snprintf(out, n, "%s/nvml-mock.conf", libdir[0] ? libdir : ".");
}

static char *trim(char *s)
{
    char *e;
    while (*s == ' ' || *s == '\t')
        s++;
    e = s + strlen(s);
    while (e > s && (e[-1] == ' ' || e[-1] == '\t' || e[-1] == '\n' || e[-1] == '\r'))
        *--e = '\0';
    return s;
}

static int parse_cuda(const char *v)
{
    int major = 0, minor = 0;
    if (strchr(v, '.')) {
        sscanf(v, "%d.%d", &major, &minor);
        return major * 1000 + minor * 10;
    }
    return atoi(v);
}

static void defaults(struct config *c)
{
    memset(c, 0, sizeof *c);
    snprintf(c->card, sizeof c->card, "A100-SXM4-40GB");
    c->count = 4;
    find_libdir();
    snprintf(c->cards, sizeof c->cards, "%s/nvml-mock-cards.tsv", libdir[0] ? libdir : ".");
    snprintf(c->driver_version, sizeof c->driver_version, "550.54.15");
    c->cuda_version = 12040;
    snprintf(c->uuid_seed, sizeof c->uuid_seed, "gpu-incident-lab");
    snprintf(c->fault, sizeof c->fault, "none");
}

/* (re)read the configuration when the file changed; called with the lock held */
static void refresh(void)
{
    char path[PATH_MAX], line[1024];
    struct stat st;
    FILE *f;
    config_path(path, sizeof path);
    if (stat(path, &st) != 0)
        memset(&st, 0, sizeof st);
    if (conf.count && st.st_ino == conf_stat.st_ino && st.st_size == conf_stat.st_size
        && st.st_mtim.tv_sec == conf_stat.st_mtim.tv_sec && st.st_mtim.tv_nsec == conf_stat.st_mtim.tv_nsec)
        return;
    defaults(&conf);
    conf_stat = st;
    f = st.st_ino ? fopen(path, "r") : NULL;
    while (f && fgets(line, sizeof line, f)) {
        char *hash = strchr(line, '#'), *eq, *key, *value;
        if (hash)
            *hash = '\0';
        eq = strchr(line, '=');
        if (!eq)
            continue;
        *eq = '\0';
        key = trim(line);
        value = trim(eq + 1);
        if (!strcmp(key, "card"))
            snprintf(conf.card, sizeof conf.card, "%s", value);
        else if (!strcmp(key, "count")) {
            conf.count = (unsigned int)atoi(value);
            if (conf.count > MAX_GPUS)
                conf.count = MAX_GPUS;
        } else if (!strcmp(key, "cards"))
            snprintf(conf.cards, sizeof conf.cards, "%s", value);
        else if (!strcmp(key, "driver_version"))
            snprintf(conf.driver_version, sizeof conf.driver_version, "%s", value);
        else if (!strcmp(key, "library_version"))
            snprintf(conf.library_version, sizeof conf.library_version, "%s", value);
        else if (!strcmp(key, "cuda_version"))
            conf.cuda_version = parse_cuda(value);
        else if (!strcmp(key, "uuid_seed"))
            snprintf(conf.uuid_seed, sizeof conf.uuid_seed, "%s", value);
        else if (!strcmp(key, "device_nodes"))
            snprintf(conf.device_nodes, sizeof conf.device_nodes, "%s", value);
        else if (!strcmp(key, "fault"))
            snprintf(conf.fault, sizeof conf.fault, "%s", value);
        else if (!strcmp(key, "lost")) {
            char *tok, *save = NULL;
            for (tok = strtok_r(value, ", ", &save); tok; tok = strtok_r(NULL, ", ", &save)) {
                int i = atoi(tok);
                if (i >= 0 && i < MAX_GPUS)
                    conf.lost[i] = 1;
            }
        } else if (!strcmp(key, "xid") && conf.nxids < MAX_XIDS) {
            struct xid *x = &conf.xids[conf.nxids];
            if (sscanf(value, "%95s %llu", x->gpu, &x->code) == 2)
                conf.nxids++;
        }
    }
    if (f)
        fclose(f);
    if (!conf.library_version[0])
        snprintf(conf.library_version, sizeof conf.library_version, "%s", conf.driver_version);
    if (getenv("NVML_MOCK_DEVICE_NODES") && *getenv("NVML_MOCK_DEVICE_NODES"))
        snprintf(conf.device_nodes, sizeof conf.device_nodes, "%s", getenv("NVML_MOCK_DEVICE_NODES"));
}

/* 64-bit FNV-1a, then splitmix64's finalizer so that near names give far UUIDs */
static unsigned long long fnv(const char *s, unsigned long long h)
{
    for (; *s; s++) {
        h ^= (unsigned char)*s;
        h *= 0x100000001b3ULL;
    }
    h = (h ^ (h >> 30)) * 0xbf58476d1ce4e5b9ULL;
    h = (h ^ (h >> 27)) * 0x94d049bb133111ebULL;
    return h ^ (h >> 31);
}

/* one row of the card table: key<TAB>name<TAB>memory MiB<TAB>compute capability */
static int load_card(void)
{
    char line[512];
    FILE *f = fopen(conf.cards, "r");
    int found = 0;
    unsigned int i;
    while (f && !found && fgets(line, sizeof line, f)) {
        char *fields[4], *save = NULL, *tok;
        int n = 0;
        if (line[0] == '#')
            continue;
        for (tok = strtok_r(line, "\t\n", &save); tok && n < 4; tok = strtok_r(NULL, "\t\n", &save))
            fields[n++] = tok;
        if (n == 4 && !strcmp(fields[0], conf.card)) {
            for (i = 0; i < MAX_GPUS; i++) {
                snprintf(gpus[i].name, sizeof gpus[i].name, "%s", fields[1]);
                gpus[i].memory_mib = strtoull(fields[2], NULL, 10);
                sscanf(fields[3], "%d.%d", &gpus[i].cc_major, &gpus[i].cc_minor);
            }
            found = 1;
        }
    }
    if (f)
        fclose(f);
    if (!found && !strcmp(conf.card, "A100-SXM4-40GB")) {
        /* built in, so the default works without the table: module_utils/sharing/cards.py CARDS */
        for (i = 0; i < MAX_GPUS; i++) {
            snprintf(gpus[i].name, sizeof gpus[i].name, "NVIDIA A100-SXM4-40GB");
            gpus[i].memory_mib = 40960;
            gpus[i].cc_major = 8;
            gpus[i].cc_minor = 0;
        }
        found = 1;
    }
    if (!found)
        return 0;
    ngpus = 0;
    for (i = 0; i < conf.count; i++) {
        char key[256], node[300];
        unsigned long long a, b;
        struct gpu *g = &gpus[ngpus];
        if (conf.device_nodes[0]) {
            snprintf(node, sizeof node, "%s/nvidia%u", conf.device_nodes, i);
            if (access(node, F_OK) != 0)
                continue;                  /* not given to this container */
        }
        snprintf(key, sizeof key, "%s/%s/%u", conf.uuid_seed, conf.card, i);
        a = fnv(key, 0xcbf29ce484222325ULL);
        b = fnv(key, a ^ 0x9e3779b97f4a7c15ULL);
        snprintf(g->uuid, sizeof g->uuid, "GPU-%08llx-%04llx-%04llx-%04llx-%012llx",
                 a >> 32, (a >> 16) & 0xffff, a & 0xffff, b >> 48, b & 0xffffffffffffULL);
        snprintf(g->serial, sizeof g->serial, "1%012llu", (b >> 8) % 1000000000000ULL);
        g->bus = i < 8 ? dgx_buses[i] : 0xC0 + i;
        g->minor = i;
        devices[ngpus].index = ngpus;
        ngpus++;
    }
    return 1;
}

static nvmlReturn_t start(void)
{
    nvmlReturn_t ret = NVML_SUCCESS;
    pthread_mutex_lock(&lock);
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
    pthread_mutex_unlock(&lock);
    return ret;
}

MOCK_EXPORT nvmlReturn_t nvmlInit_v2(void) { return start(); }
MOCK_EXPORT nvmlReturn_t nvmlInit(void) { return start(); }
MOCK_EXPORT nvmlReturn_t nvmlInitWithFlags(unsigned int flags) { (void)flags; return start(); }

MOCK_EXPORT nvmlReturn_t nvmlShutdown(void)
{
    nvmlReturn_t ret = NVML_SUCCESS;
    pthread_mutex_lock(&lock);
    if (init_count > 0)
        init_count--;
    else
        ret = NVML_ERROR_UNINITIALIZED;
    pthread_mutex_unlock(&lock);
    return ret;
}

/* the GPU behind a handle; NULL with *ret set when there is none or it is lost */
static struct gpu *gpu_of(nvmlDevice_t device, nvmlReturn_t *ret)
{
    struct nvmlDevice_st *d = device.handle;
    pthread_mutex_lock(&lock);
    refresh();
    if (!init_count)
        *ret = NVML_ERROR_UNINITIALIZED;
    else if (!d || d < devices || d >= devices + ngpus)
        *ret = NVML_ERROR_INVALID_ARGUMENT;
    else if (conf.lost[gpus[d->index].minor])
        *ret = NVML_ERROR_GPU_IS_LOST;
    else
        *ret = NVML_SUCCESS;
    pthread_mutex_unlock(&lock);
    return *ret == NVML_SUCCESS ? &gpus[d->index] : NULL;
}

#define GPU_OR_RETURN(device, g) \
    nvmlReturn_t _ret; struct gpu *g = gpu_of(device, &_ret); if (!g) return _ret

static nvmlReturn_t copy_string(char *out, unsigned int length, const char *value)
{
    if (!out)
        return NVML_ERROR_INVALID_ARGUMENT;
    if (strlen(value) + 1 > length)
        return NVML_ERROR_INSUFFICIENT_SIZE;
    memcpy(out, value, strlen(value) + 1);
    return NVML_SUCCESS;
}

static int initialized(void)
{
    int n;
    pthread_mutex_lock(&lock);
    n = init_count;
    pthread_mutex_unlock(&lock);
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
    default: return "Unknown Error";
    }
}

/* ---- system ---- */
MOCK_EXPORT nvmlReturn_t nvmlSystemGetDriverVersion(char *version, unsigned int length)
{
    char v[32];
    if (!initialized())
        return NVML_ERROR_UNINITIALIZED;
    pthread_mutex_lock(&lock);
    snprintf(v, sizeof v, "%s", conf.driver_version);
    pthread_mutex_unlock(&lock);
    return copy_string(version, length, v);
}

MOCK_EXPORT nvmlReturn_t nvmlSystemGetNVMLVersion(char *version, unsigned int length)
{
    char v[48];
    pthread_mutex_lock(&lock);
    refresh();
    snprintf(v, sizeof v, "%d.%s", conf.cuda_version / 1000, conf.library_version);
    pthread_mutex_unlock(&lock);
    return copy_string(version, length, v);
}

/* nvidia-smi prints this after a version mismatch: "NVML library version: 550.127" */
MOCK_EXPORT const char *nvml_mock_library_version(void)
{
    static char v[32];
    pthread_mutex_lock(&lock);
    refresh();
    snprintf(v, sizeof v, "%s", conf.library_version);
    pthread_mutex_unlock(&lock);
    return v;
}

MOCK_EXPORT nvmlReturn_t nvmlSystemGetCudaDriverVersion(int *cudaDriverVersion)
{
    if (!cudaDriverVersion)
        return NVML_ERROR_INVALID_ARGUMENT;
    pthread_mutex_lock(&lock);
    refresh();
    *cudaDriverVersion = conf.cuda_version;
    pthread_mutex_unlock(&lock);
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
    return NVML_ERROR_NOT_FOUND;
}

static void bus_id(unsigned int index, char *out, size_t n, int legacy)
{
    snprintf(out, n, legacy ? NVML_DEVICE_PCI_BUS_ID_LEGACY_FMT : NVML_DEVICE_PCI_BUS_ID_FMT,
             0, gpus[index].bus, 0);
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
    return copy_string(name, length, g->name);
}

MOCK_EXPORT nvmlReturn_t nvmlDeviceGetUUID(nvmlDevice_t device, char *uuid, unsigned int length)
{
    GPU_OR_RETURN(device, g);
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
    pci->pciDeviceId = 0x000010DE;         /* NVIDIA's vendor ID; the device ID is not modelled */
    bus_id((unsigned int)(g - gpus), pci->busId, sizeof pci->busId, 0);
    bus_id((unsigned int)(g - gpus), pci->busIdLegacy, sizeof pci->busIdLegacy, 1);
    return NVML_SUCCESS;
}

MOCK_EXPORT nvmlReturn_t nvmlDeviceGetPciInfo_v3(nvmlDevice_t device, nvmlPciInfo_t *pci) { return pci_info(device, pci); }
MOCK_EXPORT nvmlReturn_t nvmlDeviceGetPciInfo_v2(nvmlDevice_t device, nvmlPciInfo_t *pci) { return pci_info(device, pci); }
MOCK_EXPORT nvmlReturn_t nvmlDeviceGetPciInfo(nvmlDevice_t device, nvmlPciInfo_t *pci) { return pci_info(device, pci); }

MOCK_EXPORT nvmlReturn_t nvmlDeviceGetMemoryInfo(nvmlDevice_t device, nvmlMemory_t *memory)
{
    GPU_OR_RETURN(device, g);
    if (!memory)
        return NVML_ERROR_INVALID_ARGUMENT;
    memory->total = g->memory_mib * 1024ULL * 1024ULL;
    memory->used = 0;
    memory->free = memory->total;
    return NVML_SUCCESS;
}

MOCK_EXPORT nvmlReturn_t nvmlDeviceGetMemoryInfo_v2(nvmlDevice_t device, nvmlMemory_v2_t *memory)
{
    GPU_OR_RETURN(device, g);
    if (!memory)
        return NVML_ERROR_INVALID_ARGUMENT;
    memory->total = g->memory_mib * 1024ULL * 1024ULL;
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
    *major = g->cc_major;
    *minor = g->cc_minor;
    return NVML_SUCCESS;
}

MOCK_EXPORT nvmlReturn_t nvmlDeviceGetArchitecture(nvmlDevice_t device, nvmlDeviceArchitecture_t *arch)
{
    GPU_OR_RETURN(device, g);
    if (!arch)
        return NVML_ERROR_INVALID_ARGUMENT;
    /* compute capability 8.x Ampere (8.9 Ada), 9.x Hopper, 10.x Blackwell */
    if (g->cc_major == 8)
        *arch = g->cc_minor == 9 ? NVML_DEVICE_ARCH_ADA : NVML_DEVICE_ARCH_AMPERE;
    else if (g->cc_major == 9)
        *arch = NVML_DEVICE_ARCH_HOPPER;
    else if (g->cc_major == 10)
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
    memset(attributes, 0, sizeof *attributes);
    attributes->memorySizeMB = g->memory_mib;
    return NVML_SUCCESS;
}

MOCK_EXPORT nvmlReturn_t nvmlDeviceGetAttributes(nvmlDevice_t device, nvmlDeviceAttributes_t *attributes)
{
    return nvmlDeviceGetAttributes_v2(device, attributes);
}

/* MIG capable, MIG off: the lab's cards are all MIG-capable data-center cards */
MOCK_EXPORT nvmlReturn_t nvmlDeviceGetMigMode(nvmlDevice_t device, unsigned int *currentMode, unsigned int *pendingMode)
{
    GPU_OR_RETURN(device, g);
    (void)g;
    if (!currentMode || !pendingMode)
        return NVML_ERROR_INVALID_ARGUMENT;
    *currentMode = NVML_DEVICE_MIG_DISABLE;
    *pendingMode = NVML_DEVICE_MIG_DISABLE;
    return NVML_SUCCESS;
}

MOCK_EXPORT nvmlReturn_t nvmlDeviceIsMigDeviceHandle(nvmlDevice_t device, unsigned int *isMigDevice)
{
    GPU_OR_RETURN(device, g);
    (void)g;
    if (!isMigDevice)
        return NVML_ERROR_INVALID_ARGUMENT;
    *isMigDevice = 0;
    return NVML_SUCCESS;
}

MOCK_EXPORT nvmlReturn_t nvmlDeviceGetMaxMigDeviceCount(nvmlDevice_t device, unsigned int *count)
{
    GPU_OR_RETURN(device, g);
    (void)g;
    if (!count)
        return NVML_ERROR_INVALID_ARGUMENT;
    *count = 7;                            /* seven GPU instances at most (MIG user guide) */
    return NVML_SUCCESS;
}

MOCK_EXPORT nvmlReturn_t nvmlDeviceGetMigDeviceHandleByIndex(nvmlDevice_t device, unsigned int index, nvmlDevice_t *migDevice)
{
    GPU_OR_RETURN(device, g);
    (void)g; (void)index; (void)migDevice;
    return NVML_ERROR_NOT_FOUND;           /* MIG is off: no MIG devices */
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

/* ---- events: Xid delivery ---- */
MOCK_EXPORT nvmlReturn_t nvmlDeviceGetSupportedEventTypes(nvmlDevice_t device, unsigned long long *eventTypes)
{
    GPU_OR_RETURN(device, g);
    (void)g;
    if (!eventTypes)
        return NVML_ERROR_INVALID_ARGUMENT;
    *eventTypes = nvmlEventTypeXidCriticalError | nvmlEventTypeSingleBitEccError | nvmlEventTypeDoubleBitEccError;
    return NVML_SUCCESS;
}

MOCK_EXPORT nvmlReturn_t nvmlEventSetCreate(nvmlEventSet_t *set)
{
    int i;
    if (!set)
        return NVML_ERROR_INVALID_ARGUMENT;
    if (!initialized())
        return NVML_ERROR_UNINITIALIZED;
    pthread_mutex_lock(&lock);
    refresh();
    for (i = 0; i < MAX_SETS && sets[i].used; i++)
        ;
    if (i == MAX_SETS) {
        pthread_mutex_unlock(&lock);
        return NVML_ERROR_MEMORY;
    }
    memset(&sets[i], 0, sizeof sets[i]);
    sets[i].used = 1;
    /* events already in the file happened before this set existed */
    sets[i].xids_delivered = conf.nxids;
    memcpy(sets[i].lost_reported, conf.lost, sizeof conf.lost);
    set->handle = &sets[i];
    pthread_mutex_unlock(&lock);
    return NVML_SUCCESS;
}

MOCK_EXPORT nvmlReturn_t nvmlDeviceRegisterEvents(nvmlDevice_t device, unsigned long long eventTypes, nvmlEventSet_t set)
{
    GPU_OR_RETURN(device, g);
    if (!set.handle)
        return NVML_ERROR_INVALID_ARGUMENT;
    pthread_mutex_lock(&lock);
    set.handle->mask[g - gpus] |= eventTypes;
    pthread_mutex_unlock(&lock);
    return NVML_SUCCESS;
}

static int gpu_index(const char *id)
{
    unsigned int i;
    char *end;
    long n = strtol(id, &end, 10);
    if (*id && !*end) {                    /* a host index (minor number) */
        for (i = 0; i < ngpus; i++)
            if ((long)gpus[i].minor == n)
                return (int)i;
        return -1;
    }
    for (i = 0; i < ngpus; i++)
        if (!strcmp(gpus[i].uuid, id))
            return (int)i;
    return -1;
}

/* the next event for this set, if any; called with the lock held */
static int next_event(struct nvmlEventSet_st *s, nvmlEventData_t *data)
{
    unsigned int i;
    memset(data, 0, sizeof *data);
    data->gpuInstanceId = 0xFFFFFFFF;
    data->computeInstanceId = 0xFFFFFFFF;
    for (i = 0; i < ngpus; i++) {
        if (conf.lost[gpus[i].minor] && !s->lost_reported[gpus[i].minor]) {
            s->lost_reported[gpus[i].minor] = 1;
            if (s->mask[i] & nvmlEventTypeXidCriticalError) {
                data->device.handle = &devices[i];
                data->eventType = nvmlEventTypeXidCriticalError;
                data->eventData = 79;      /* GPU has fallen off the bus */
                return 1;
            }
        }
    }
    if (s->xids_delivered > conf.nxids)    /* the file was rewritten with fewer events */
        s->xids_delivered = conf.nxids;
    while (s->xids_delivered < conf.nxids) {
        struct xid *x = &conf.xids[s->xids_delivered++];
        int idx = gpu_index(x->gpu);
        if (idx >= 0 && (s->mask[idx] & nvmlEventTypeXidCriticalError)) {
            data->device.handle = &devices[idx];
            data->eventType = nvmlEventTypeXidCriticalError;
            data->eventData = x->code;
            return 1;
        }
    }
    return 0;
}

MOCK_EXPORT nvmlReturn_t nvmlEventSetWait_v2(nvmlEventSet_t set, nvmlEventData_t *data, unsigned int timeoutms)
{
    struct timespec begin, now, nap = { 0, 100 * 1000 * 1000 };
    if (!set.handle || !data)
        return NVML_ERROR_INVALID_ARGUMENT;
    if (!initialized())
        return NVML_ERROR_UNINITIALIZED;
    clock_gettime(CLOCK_MONOTONIC, &begin);
    for (;;) {
        int found;
        pthread_mutex_lock(&lock);
        refresh();
        found = next_event(set.handle, data);
        pthread_mutex_unlock(&lock);
        if (found)
            return NVML_SUCCESS;
        clock_gettime(CLOCK_MONOTONIC, &now);
        if ((now.tv_sec - begin.tv_sec) * 1000 + (now.tv_nsec - begin.tv_nsec) / 1000000 >= (long)timeoutms)
            return NVML_ERROR_TIMEOUT;
        nanosleep(&nap, NULL);             /* the file is polled ten times a second */
    }
}

MOCK_EXPORT nvmlReturn_t nvmlEventSetWait(nvmlEventSet_t set, nvmlEventData_t *data, unsigned int timeoutms)
{
    return nvmlEventSetWait_v2(set, data, timeoutms);
}

MOCK_EXPORT nvmlReturn_t nvmlEventSetFree(nvmlEventSet_t set)
{
    if (!set.handle)
        return NVML_ERROR_INVALID_ARGUMENT;
    pthread_mutex_lock(&lock);
    set.handle->used = 0;
    pthread_mutex_unlock(&lock);
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
