/* mbk/mbk.h - the whole public API of the mbk multibody kernel. */
#ifndef MBK_MBK_H
#define MBK_MBK_H

#include "mbk/alloc.h"
#include "mbk/checkpoint.h"
#include "mbk/constraints.h"
#include "mbk/derivatives.h"
#include "mbk/ensemble.h"
#include "mbk/events.h"
#include "mbk/external.h"
#include "mbk/function.h"
#include "mbk/integrator.h"
#include "mbk/forces.h"
#include "mbk/matter.h"
#include "mbk/mobilizer.h"
#include "mbk/spatial.h"
#include "mbk/stage.h"
#include "mbk/state.h"
#include "mbk/status.h"
#include "mbk/system.h"
#include "mbk/urdf.h"
#include "mbk/value.h"
#include "mbk/version.h"

#endif
