// libsodium (Debian's libsodium-dev): the sealing of encrypted fields, in SeamSync's FieldSeal.
#include <sodium.h>
