#pragma once
// The result store: runs, jobs and records in SQLite (WAL). Every record is committed in its
// own transaction the moment it is added, so an interrupted run keeps all it finished.
#include "fourfold/core/json.hpp"
#include "fourfold/core/record.hpp"
#include "fourfold/store/sqlite.hpp"

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

namespace fourfold::store {

struct run_row {
    std::int64_t id = 0;
    std::string label;
    std::string started_at;
    std::string finished_at;
    std::string status; // running | complete | interrupted | failed
    std::string device;
    std::string command;
    json provenance = json::object();
    // found by a label that other runs carry too: their ids (the latest is the one picked)
    std::vector<std::int64_t> same_label_runs;
    json to_json() const;
};

struct stored_record {
    std::int64_t id = 0;
    std::int64_t run_id = 0;
    std::int64_t job_row = 0;
    std::string recorded_at;
    record rec;
    json to_json(bool with_samples) const;
};

enum class open_mode { read_write, read_only };

// What identifies a store file's content from outside: a writer's checkpoint changes it.
struct file_stamp {
    std::uint64_t device = 0, inode = 0;
    std::int64_t size = -1, mtime_ns = 0;
    bool wal = false; // a -wal file beside it
    static file_stamp of(const std::string& path);
    bool operator==(const file_stamp& o) const {
        return device == o.device && inode == o.inode && size == o.size && mtime_ns == o.mtime_ns &&
               wal == o.wal;
    }
    bool operator!=(const file_stamp& o) const { return !(*this == o); }
};

// Throws bad_input when `label` cannot name a run: a control character or newline (it would
// break the tables and the CSV), or digits only (it would read as a run id).
void check_label(const std::string& label);

// Throws bad_input when `output` is the store at `store_path` or one of the files SQLite keeps
// beside it (-wal, -shm, -journal): writing there would destroy the records. Compared by the
// file's identity (device and inode) where both exist, so that another spelling, a symbolic or a
// hard link is caught, and by the resolved location where the output does not exist yet.
void refuse_store_as_output(const std::string& output, const std::string& store_path);

class result_store {
  public:
    // Throws bad_input with one line naming the path and what is wrong with it: cannot be
    // created or written, read-only (for writing), damaged (SQLite's quick check, for writing),
    // not a database, not a fourfold store, a newer schema, missing. Read-only opening writes
    // nothing, not even the -wal and -shm files SQLite keeps beside a store in WAL mode.
    static result_store open(const std::string& path, open_mode mode);

    const std::string& path() const { return m_path; }
    int schema_version() const { return m_schema_version; }

    std::int64_t begin_run(const std::string& label, const std::string& device,
                           const std::string& command, const json& provenance);
    void set_provenance(std::int64_t run, const json& provenance);
    void finish_run(std::int64_t run, std::string_view status);
    // A run that is resumed: status back to running, its provenance replaced (the new pid and
    // the note of the resume), finished_at cleared.
    void reopen_run(std::int64_t run, const json& provenance);
    // The (ledger, job key) of every record the run holds: what a resume need not measure.
    std::set<std::pair<std::string, std::string>> record_keys(std::int64_t run) const;
    // Inserts the job row when the run has none for this key, then the record: one transaction.
    std::int64_t add_record(std::int64_t run, const record& rec);

    std::vector<run_row> runs() const;
    // A run id ("12") or a label (the latest run carrying it). Throws bad_input listing choices.
    run_row find_run(const std::string& id_or_label) const;
    // Throws bad_input naming the run and the record when a stored value does not parse.
    std::vector<stored_record> records(std::int64_t run, bool with_samples) const;
    // Records stored per run id, every ledger together.
    std::map<std::int64_t, std::int64_t> record_counts() const;

  private:
    result_store(std::string path, database db, int version)
        : m_path(std::move(path)), m_db(std::move(db)), m_schema_version(version) {}
    std::int64_t job_row(std::int64_t run, const job_id& job);
    run_row read_run(const statement& st) const;
    static result_store open_once(const std::string& path, open_mode mode);
    static database open_reader(const std::string& path, bool& immutable, file_stamp& stamp);
    template <class Read> auto reading(Read&& read) const -> decltype(read());

    std::string m_path;
    mutable database m_db; // a read-only store reopens it when the file changed under a read
    int m_schema_version;
    mutable bool m_immutable = false;
    mutable file_stamp m_stamp;
};

} // namespace fourfold::store
