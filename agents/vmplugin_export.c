/* The table numaorch-libvirt.so exports (see orchestrator/actuator/vmplugin.h).
 * Built into the module only, never into numaorchd. */
#include "vmapply.h"
#include "vmsrc.h"

/* Not static, not const-qualified away: dlsym finds it by name. */
extern const struct vmplugin numaorch_vmplugin;
const struct vmplugin numaorch_vmplugin = {
	.abi = VMPLUGIN_ABI,
	.size = sizeof(struct vmplugin),
	.src_new = vmsrc_new,
	.src_free = vmsrc_free,
	.scan = vmsrc_scan,
	.take_placements = vmsrc_take_placements,
	.get_status = vmsrc_get_status,
	.apply_new = vmapply_new,
	.apply_free = vmapply_free,
	.move = vmapply_move,
	.set_mems = vmapply_set_mems,
};
