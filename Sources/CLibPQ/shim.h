// libpq, PostgreSQL's C client (Debian's libpq-dev).
#include <libpq-fe.h>
