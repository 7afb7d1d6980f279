/* smi.h - what the two files of the nvidia-smi reader share (nvidia_smi.c, smi_mig.c) */
#ifndef NVML_MOCK_SMI_H
#define NVML_MOCK_SMI_H

#include "nvml.h"

#define MAX_SMI_PLACEMENTS 16

int smi_selected(const char *ids, unsigned int i);
void smi_list_mig(nvmlDevice_t gpu);
int smi_set_mig_mode(unsigned int count, const char *ids, const char *value);
int smi_reset(unsigned int count, const char *ids);
int smi_mig(unsigned int count, const char *ids, const char *what);

#endif
