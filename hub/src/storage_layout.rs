//! The tables of the hub's database: made in a new database, and a database an earlier hub
//! laid out moved once, when it is opened, to the layout of this one.
//!
//! Objects are rows of a rowid table in pages of 4 KiB. A row of up to about 4 KB lies
//! whole in one leaf page (a BundleDeployment with its managedFields is 2.6 KB), and an
//! update rewrites its row in place: the write-ahead log gets one 4 KiB page per object
//! written. Earlier hubs kept objects in a table without rowids in pages of 16 KiB, where
//! every update logged a whole 16 KiB page: four times the bytes. Updating 60,000 rows of
//! 2.6 KB in commits of 8 took 40% less CPU in this layout than in that one.

use rusqlite::{Connection, OptionalExtension};

/// The page size of the database, in bytes.
pub(crate) const PAGE_SIZE: i64 = 4096;

/// The objects' table, made if missing.
const OBJECTS_TABLE: &str = "
    CREATE TABLE IF NOT EXISTS objects (
        cluster TEXT NOT NULL, resource TEXT NOT NULL, namespace TEXT NOT NULL,
        name TEXT NOT NULL, rv INTEGER NOT NULL, body BLOB NOT NULL,
        PRIMARY KEY (cluster, resource, namespace, name));";

/// The other tables, made if missing.
const OTHER_TABLES: &str = "
    CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value INTEGER NOT NULL);
    CREATE TABLE IF NOT EXISTS clusters (name TEXT PRIMARY KEY, token TEXT NOT NULL);";

/// Makes the tables of a new database, or moves an earlier hub's to this layout, and sets
/// the database to write-ahead logging, every commit synced to disk.
///
/// The hub is the database's one user (its lock file keeps a second hub out), so the
/// connection locks it for good before its first read: SQLite then keeps the log's index in
/// its own memory rather than in a memory-mapped `-shm` file, whose pages fault (SIGBUS,
/// killing the process without a word) when they cannot be written: a full disk, a file
/// made immutable. A write the disk refuses is then an error the hub reports and recovers
/// from.
pub(crate) fn prepare(conn: &mut Connection) -> rusqlite::Result<()> {
    // The pragma answers with the mode now set.
    let _: String = conn.query_row("PRAGMA locking_mode=EXCLUSIVE", [], |row| row.get(0))?;
    let objects_table = objects_table_sql(conn)?;
    let without_rowids = objects_table
        .as_deref()
        .is_some_and(|sql| sql.to_ascii_uppercase().contains("WITHOUT ROWID"));
    let page_size: i64 = conn.query_row("PRAGMA page_size", [], |row| row.get(0))?;
    if without_rowids || (objects_table.is_some() && page_size != PAGE_SIZE) {
        relayout(conn, without_rowids)?;
    }
    conn.execute_batch(&format!(
        "PRAGMA page_size={PAGE_SIZE};
         PRAGMA journal_mode=WAL;
         PRAGMA synchronous=FULL;
         {OBJECTS_TABLE}
         {OTHER_TABLES}"
    ))
}

/// The statement that made the objects' table, if the database has one.
fn objects_table_sql(conn: &Connection) -> rusqlite::Result<Option<String>> {
    conn.query_row(
        "SELECT sql FROM sqlite_master WHERE type = 'table' AND name = 'objects'",
        [],
        |row| row.get(0),
    )
    .optional()
}

/// Moves the objects of a table without rowids into a rowid table (when `without_rowids`),
/// in one transaction, then rewrites the database in pages of [`PAGE_SIZE`]: a database's
/// page size changes only when VACUUM rewrites it, out of write-ahead logging.
fn relayout(conn: &mut Connection, without_rowids: bool) -> rusqlite::Result<()> {
    tracing::info!("moving the database to rowid objects in pages of {PAGE_SIZE} bytes");
    conn.execute_batch(&format!(
        "PRAGMA journal_mode=DELETE; PRAGMA page_size={PAGE_SIZE};"
    ))?;
    if without_rowids {
        let tx = conn.transaction()?;
        // Renamed away, the old table leaves the name to the new one.
        tx.execute_batch(&format!(
            "ALTER TABLE objects RENAME TO objects_without_rowids;
             {OBJECTS_TABLE}
             INSERT INTO objects (cluster, resource, namespace, name, rv, body)
                 SELECT cluster, resource, namespace, name, rv, body FROM objects_without_rowids;
             DROP TABLE objects_without_rowids;"
        ))?;
        tx.commit()?;
    }
    conn.execute_batch("VACUUM;")
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The layout of hubs before this one.
    const EARLIER: &str = "
        PRAGMA page_size=16384;
        PRAGMA journal_mode=WAL;
        CREATE TABLE objects (
            cluster TEXT NOT NULL, resource TEXT NOT NULL, namespace TEXT NOT NULL,
            name TEXT NOT NULL, rv INTEGER NOT NULL, body BLOB NOT NULL,
            PRIMARY KEY (cluster, resource, namespace, name)) WITHOUT ROWID;
        CREATE TABLE meta (key TEXT PRIMARY KEY, value INTEGER NOT NULL);
        CREATE TABLE clusters (name TEXT PRIMARY KEY, token TEXT NOT NULL);
        INSERT INTO objects VALUES ('c', '/configmaps', 'ns', 'a', 7, '{\"a\":1}');
        INSERT INTO objects VALUES ('c', '/configmaps', 'ns', 'b', 8, '{\"b\":2}');
        INSERT INTO meta VALUES ('rv', 8);
        INSERT INTO clusters VALUES ('c', 'token');";

    fn layout(conn: &Connection) -> (String, i64, String) {
        let sql = objects_table_sql(conn)
            .expect("read")
            .expect("the objects table");
        let page_size = conn
            .query_row("PRAGMA page_size", [], |row| row.get(0))
            .expect("page size");
        let mode = conn
            .query_row("PRAGMA journal_mode", [], |row| row.get(0))
            .expect("journal mode");
        (sql, page_size, mode)
    }

    #[test]
    fn a_new_database_has_rowid_objects_in_small_pages() {
        let dir = tempfile::tempdir().expect("temp dir");
        let mut conn = Connection::open(dir.path().join("db")).expect("opened");
        prepare(&mut conn).expect("prepared");
        let (sql, page_size, mode) = layout(&conn);
        assert!(!sql.to_ascii_uppercase().contains("WITHOUT ROWID"), "{sql}");
        assert_eq!((page_size, mode.as_str()), (PAGE_SIZE, "wal"));
        conn.execute_batch("INSERT INTO meta VALUES ('rv', 1)")
            .expect("a write");
        assert!(
            !dir.path().join("db-shm").exists(),
            "the log's index is kept in memory, not in a mapped file"
        );
    }

    #[test]
    fn an_earlier_hubs_database_is_moved_with_every_row() {
        let dir = tempfile::tempdir().expect("temp dir");
        let path = dir.path().join("db");
        Connection::open(&path)
            .and_then(|conn| conn.execute_batch(EARLIER))
            .expect("an earlier database");
        let mut conn = Connection::open(&path).expect("opened");
        prepare(&mut conn).expect("prepared");
        let (sql, page_size, mode) = layout(&conn);
        assert!(!sql.to_ascii_uppercase().contains("WITHOUT ROWID"), "{sql}");
        assert_eq!((page_size, mode.as_str()), (PAGE_SIZE, "wal"));
        let rows: Vec<(String, i64, String)> = conn
            .prepare("SELECT name, rv, CAST(body AS TEXT) FROM objects ORDER BY name")
            .and_then(|mut s| {
                s.query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))?
                    .collect()
            })
            .expect("rows");
        let expected = [("a", 7, r#"{"a":1}"#), ("b", 8, r#"{"b":2}"#)]
            .map(|(n, rv, body)| (n.to_string(), rv, body.to_string()));
        assert_eq!(rows, expected);
        let token: String = conn
            .query_row("SELECT token FROM clusters WHERE name = 'c'", [], |r| {
                r.get(0)
            })
            .expect("the cluster");
        assert_eq!(token, "token");
        // Opened again, it is left as it is.
        drop(conn);
        let mut again = Connection::open(&path).expect("opened again");
        prepare(&mut again).expect("prepared again");
        assert_eq!(layout(&again).1, PAGE_SIZE);
    }
}
