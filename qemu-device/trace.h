/* The npu events are in hw/misc's group (build-qemu.sh, trace-events). */
#include "trace/trace-hw_misc.h"
