/* Inert libcudnn_adv.so.9: the version check the real libcudnn.so.9 calls when it loads this sub-library.
 * Everything else: CUDNN_STATUS_NOT_SUPPORTED (3000). */
#include "inert_common.h"

TW_EXPORT int cudnnAdvVersionCheck(void) { return 0; }
