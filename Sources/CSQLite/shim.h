#ifndef SEAM_CSQLITE_SHIM_H
#define SEAM_CSQLITE_SHIM_H
#include <sqlite3.h>

/// SQLITE_TRANSIENT is a macro over a cast Swift cannot import; it tells SQLite to copy bound bytes.
static inline void (*seam_sqlite_transient(void))(void *) { return SQLITE_TRANSIENT; }

/// sqlite3_db_config is variadic; this wrapper sets one boolean option.
static inline int seam_sqlite_db_config_bool(sqlite3 *db, int op, int on) {
    int result = 0;
    return sqlite3_db_config(db, op, on, &result);
}

/// sqlite3_config is variadic; this one turns SQLite's memory statistics off or on. Off, an
/// allocation takes no global mutex. Only before SQLite is initialised (the first open).
static inline int seam_sqlite_config_memstatus(int on) { return sqlite3_config(SQLITE_CONFIG_MEMSTATUS, on); }
#endif
