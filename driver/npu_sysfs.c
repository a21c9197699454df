// SPDX-License-Identifier: GPL-2.0-only
/*
 * npu_sysfs.c - sysfs attributes of the PCI device (group "npu", described
 * in Documentation/ABI/testing/sysfs-driver-npu):
 *
 *   npu/jobs_submitted  jobs written to the rings, all rings
 *   npu/jobs_completed  jobs that completed without error
 *   npu/jobs_failed     jobs that completed with an error
 *   npu/faults          device errors
 *   npu/resets          ring resets after a timeout
 *   npu/utilization     per ring: busy ns as the device counts them,
 *                       "ring busy_ns" one ring per line
 */
#include <linux/device.h>
#include <linux/pci.h>
#include <linux/sysfs.h>
#include <drm/drm_drv.h>

#include "npu_regs.h"
#include "npu_sysfs.h"

static struct npu_device *npu_from_dev(struct device *dev)
{
	return pci_get_drvdata(to_pci_dev(dev));
}

#define NPU_SUM_ATTR(_name, _field)					\
static ssize_t _name##_show(struct device *dev,				\
			    struct device_attribute *attr, char *buf)	\
{									\
	struct npu_device *ndev = npu_from_dev(dev);			\
	u64 sum = 0;							\
	u32 r;								\
									\
	for (r = 0; r < ndev->num_rings; r++)				\
		sum += READ_ONCE(ndev->rings[r]._field);		\
	return sysfs_emit(buf, "%llu\n", sum);				\
}									\
static DEVICE_ATTR_RO(_name)

NPU_SUM_ATTR(jobs_submitted, stats_submitted);
NPU_SUM_ATTR(jobs_completed, stats_completed);
NPU_SUM_ATTR(jobs_failed, stats_failed);
NPU_SUM_ATTR(faults, stats_faults);
NPU_SUM_ATTR(resets, stats_resets);

static ssize_t utilization_show(struct device *dev,
				struct device_attribute *attr, char *buf)
{
	struct npu_device *ndev = npu_from_dev(dev);
	ssize_t len = 0;
	int idx;
	u32 r;

	if (!drm_dev_enter(&ndev->drm, &idx))
		return -ENODEV;
	for (r = 0; r < ndev->num_rings; r++)
		len += sysfs_emit_at(buf, len, "%s %llu\n",
				     ndev->rings[r].name,
				     npu_rd64_counter(ndev, NPU_RING_BASE(r) +
						      NPU_RING_BUSY_LO));
	drm_dev_exit(idx);
	return len;
}
static DEVICE_ATTR_RO(utilization);

static struct attribute *npu_attrs[] = {
	&dev_attr_jobs_submitted.attr,
	&dev_attr_jobs_completed.attr,
	&dev_attr_jobs_failed.attr,
	&dev_attr_faults.attr,
	&dev_attr_resets.attr,
	&dev_attr_utilization.attr,
	NULL,
};

static const struct attribute_group npu_attr_group = {
	.name = "npu",
	.attrs = npu_attrs,
};

/*
 * &pci_driver.dev_groups: the driver core creates the group once probe
 * succeeded and removes it before remove() runs, so the attributes never
 * see a half-built or torn-down device.
 */
const struct attribute_group *npu_dev_groups[] = {
	&npu_attr_group,
	NULL,
};
