#include "orchestrator/mover/moverfixture.h"

bool moverfx_relocate_all(void)
{
	return false;
}
