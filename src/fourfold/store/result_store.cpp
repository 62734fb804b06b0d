#include "fourfold/store/result_store.hpp"

#include "fourfold/core/error.hpp"
#include "fourfold/core/files.hpp"
#include "fourfold/core/text.hpp"
#include "fourfold/store/schema.hpp"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <fmt/format.h>
#include <sys/stat.h>

namespace fourfold::store {
namespace {

std::vector<std::byte> encode_samples(const std::vector<double>& values) {
    std::vector<std::byte> out(values.size() * sizeof(double));
    if (!values.empty())
        std::memcpy(out.data(), values.data(), out.size());
    return out; // host byte order: little-endian on every platform fourfold targets
}

std::vector<double> decode_samples(const std::vector<std::byte>& bytes) {
    std::vector<double> out(bytes.size() / sizeof(double));
    if (!out.empty())
        std::memcpy(out.data(), bytes.data(), out.size() * sizeof(double));
    return out;
}

void bind_headline(statement& st, int index, const headline_column& col, const json& figures) {
    const json::json_pointer ptr{std::string(col.pointer)};
    if (!figures.contains(ptr) || figures.at(ptr).is_null()) {
        st.bind_null(index);
        return;
    }
    const auto& v = figures.at(ptr);
    if (v.is_number_integer())
        st.bind(index, v.get<std::int64_t>());
    else if (v.is_number())
        st.bind(index, v.get<double>());
    else if (v.is_string())
        st.bind(index, v.get<std::string>());
    else if (v.is_boolean())
        st.bind(index, std::int64_t{v.get<bool>() ? 1 : 0});
    else
        st.bind(index, v.dump());
}

// "file:" URI of a path (SQLITE_OPEN_URI): the characters a URI gives a meaning escaped.
std::string file_uri(const std::string& path, std::string_view query) {
    std::string out = "file:";
    for (const char c : path) {
        if (c == '%' || c == '?' || c == '#')
            out += fmt::format("%{:02X}", static_cast<unsigned char>(c));
        else
            out += c;
    }
    return out + "?" + std::string(query);
}

std::string read_only_store(const std::string& path) {
    return fmt::format("store '{}' is read-only (this process may not write the file or its "
                       "directory); 'fourfold run' adds to a store: give --db a writable store or "
                       "a new file (export, compare and report read this one as it is)",
                       path);
}

// A bound on the quick check of a store opened for writing: a damaged one is refused before
// anything is written to it, and a large healthy one does not hold up the run. Past the bound
// the check stops unfinished and the store is used: a page it did not reach that is damaged
// fails its write with SQLite's own error.
constexpr double k_quick_check_s = 3.0;

extern "C" int stop_after_deadline(void* deadline) {
    return std::chrono::steady_clock::now() >
                   *static_cast<std::chrono::steady_clock::time_point*>(deadline)
               ? 1
               : 0;
}

// The first problem SQLite's quick check finds, or nullopt for a sound store (or a check that
// ran out of time).
std::optional<std::string> damage_of(database& db) {
    auto deadline = std::chrono::steady_clock::now() +
                    std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                        std::chrono::duration<double>(k_quick_check_s));
    sqlite3_progress_handler(db.get(), 1000, stop_after_deadline, &deadline);
    std::optional<std::string> problem;
    try {
        auto st = db.prepare("PRAGMA quick_check(1)");
        if (st.step() && st.text(0) != "ok")
            problem = st.text(0);
    } catch (const sqlite_error& e) {
        const int primary = e.code() & 0xff;
        if (primary == SQLITE_NOTADB)
            throw; // not damaged: not a database at all
        if (primary != SQLITE_INTERRUPT)
            problem = e.what();
    }
    sqlite3_progress_handler(db.get(), 0, nullptr, nullptr);
    if (problem)
        std::replace(problem->begin(), problem->end(), '\n', ' ');
    return problem;
}

// A value read back from the store: one that does not parse names its run and record, so that
// the damage can be found (a library's message names neither).
json parse_stored(const std::string& text, const char* what, std::int64_t run,
                  std::string_view table, std::int64_t record) {
    auto value = json::parse(text, nullptr, false);
    if (value.is_discarded() || !value.is_object())
        throw bad_input(fmt::format(
            "run {}, {} record {}: its stored {} is not a JSON object; the store is damaged "
            "there (the other records read; restore the store from a copy)",
            run, table, record, what));
    return value;
}

} // namespace

file_stamp file_stamp::of(const std::string& path) {
    file_stamp f;
    struct stat st {};
    if (stat(path.c_str(), &st) == 0) {
        f.device = static_cast<std::uint64_t>(st.st_dev);
        f.inode = static_cast<std::uint64_t>(st.st_ino);
        f.size = static_cast<std::int64_t>(st.st_size);
        f.mtime_ns = static_cast<std::int64_t>(st.st_mtim.tv_sec) * 1000000000 + st.st_mtim.tv_nsec;
    }
    f.wal = path_exists(path + "-wal");
    return f;
}

// A read-only connection: `immutable` (no locks, no side files) while no -wal file exists,
// otherwise a plain read-only one that reads through the live writer's WAL.
database result_store::open_reader(const std::string& path, bool& immutable, file_stamp& stamp) {
    stamp = file_stamp::of(path);
    immutable = !stamp.wal;
    return database(file_uri(path, immutable ? "mode=ro&immutable=1" : "mode=ro"),
                    SQLITE_OPEN_READONLY | SQLITE_OPEN_URI);
}

// An immutable connection reads the file as it is; a writer that starts meanwhile and
// checkpoints into the file could change pages under it. So what it read counts only if the file
// is as it was when the connection opened (same inode, size and modification time, and still no
// -wal); otherwise the read is done again through a fresh connection (through the WAL, if a
// writer is live now). A record is therefore never read torn.
template <class Read> auto result_store::reading(Read&& read) const -> decltype(read()) {
    for (int attempt = 0;; ++attempt) {
        if (!m_immutable)
            return read();
        try {
            auto result = read();
            if (file_stamp::of(m_path) == m_stamp)
                return result;
        } catch (const std::exception&) {
            if (file_stamp::of(m_path) == m_stamp || attempt >= 10)
                throw;
        }
        if (attempt >= 10)
            throw std::runtime_error(fmt::format(
                "store '{}' changed under each of 10 reads (a writer checkpointing into it); try "
                "again",
                m_path));
        m_db = open_reader(m_path, m_immutable, m_stamp);
        m_db.exec("PRAGMA foreign_keys = ON");
    }
}

void check_label(const std::string& label) {
    for (const char c : label)
        if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f)
            throw bad_input(fmt::format(
                "--label '{}' holds a control character (byte 0x{:02x}); give a label of "
                "printable characters on one line",
                label, static_cast<unsigned char>(c)));
    std::uint64_t number = 0;
    if (parse_uint(label, number))
        throw bad_input(fmt::format("--label '{}' is digits only and would read as a run id; give "
                                    "a label with a letter in it (e.g. 'run-{}')",
                                    label, label));
}

void refuse_store_as_output(const std::string& output, const std::string& store_path) {
    if (output.empty() || store_path.empty())
        return;
    const auto out_id = identity_of(output);
    const auto out_at = resolved_location(output);
    for (const char* suffix : {"", "-wal", "-shm", "-journal"}) {
        const auto file = store_path + suffix;
        const auto id = identity_of(file);
        const bool same =
            out_id && id ? *out_id == *id : !out_at.empty() && out_at == resolved_location(file);
        if (same)
            throw bad_input(fmt::format(
                "-o '{}' is {} of store '{}', which this command reads: writing there would "
                "destroy its records; give -o another file",
                output, *suffix ? fmt::format("the {} file", suffix + 1) : std::string("the file"),
                store_path));
    }
}

json run_row::to_json() const {
    return json{{"id", id},
                {"label", label},
                {"started_at", started_at},
                {"finished_at", finished_at},
                {"status", status},
                {"device", device},
                {"command", command},
                {"provenance", provenance}};
}

json stored_record::to_json(bool with_samples) const {
    const auto& j = rec.job;
    json out{{"id", id},
             {"run", run_id},
             {"ledger", to_string(rec.which)},
             {"workload", j.workload},
             {"variant", j.variant},
             {"device", j.device},
             {"dtype", j.dtype},
             {"params", j.params},
             {"key", j.key()},
             {"case_key", j.case_key()},
             {"seed", j.seed},
             {"status", to_string(rec.status)},
             {"unit", rec.unit},
             {"figures", rec.figures},
             {"recorded_at", recorded_at}};
    if (rec.status != record_status::ok)
        out["reason"] = rec.reason;
    if (with_samples) {
        out["samples"] = rec.samples;
        out["samples_unit"] = rec.samples_unit.empty() ? rec.unit : rec.samples_unit;
    }
    return out;
}

result_store result_store::open(const std::string& path, open_mode mode) {
    if (mode == open_mode::read_write)
        return open_once(path, mode);
    // A store read while a writer creates or checkpoints it may look damaged for an instant:
    // what failed counts only if the file is as it was when the attempt began.
    for (int attempt = 0;; ++attempt) {
        const auto before = file_stamp::of(path);
        try {
            return open_once(path, mode);
        } catch (const std::exception&) {
            if (attempt >= 10 || file_stamp::of(path) == before)
                throw;
        }
    }
}

result_store result_store::open_once(const std::string& path, open_mode mode) {
    const bool writable = mode == open_mode::read_write;
    const std::string& shown = path;
    if (path.empty())
        throw bad_input("--db is empty; give the path of a store (or of a new file for 'run')");
    if (!writable && !path_exists(path))
        throw bad_input(fmt::format("store '{}' does not exist; give --db the path of a store "
                                    "written by 'fourfold run'",
                                    shown));
    if (is_directory(path))
        throw bad_input(fmt::format("store '{}' is a directory; give --db a file path", shown));
    const bool exists = path_exists(path);
    // SQLite writes a store in WAL mode through -wal and -shm files beside it: a writable file
    // in a directory that is not writable cannot take a run either.
    if (writable && exists && (!is_writable(path) || !is_writable(directory_of(path))))
        throw bad_input(read_only_store(shown));
    bool immutable = false;
    file_stamp stamp;
    try {
        std::optional<database> opened;
        if (writable) {
            opened.emplace(shown, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE);
            // SQLite opens a file it may not write (a read-only mount) read-only, silently
            if (sqlite3_db_readonly(opened->get(), "main") == 1)
                throw bad_input(read_only_store(shown));
            if (exists && file_size(path) > 0)
                if (const auto damage = damage_of(*opened))
                    throw bad_input(fmt::format(
                        "store '{}' is damaged (SQLite's quick check: {}); nothing was written to "
                        "it. Keep it as it is, salvage its records with 'sqlite3 {} .recover | "
                        "sqlite3 recovered.db', and give --db another file",
                        shown, *damage, shown));
        } else {
            // Reading must not write: a connection to a store in WAL mode would create the
            // -wal and -shm files beside it and, not being able to checkpoint, leave them
            // there. With no -wal (no writer is live, none died), every record is in the file
            // itself and `immutable` reads it without locks or side files; with one, its records
            // are read through it as SQLite does for any reader.
            opened.emplace(open_reader(path, immutable, stamp));
        }
        auto& db = *opened;
        db.exec("PRAGMA foreign_keys = ON");
        // a new store is in WAL mode before its schema is written: a reader never meets a
        // rollback journal's half-written pages
        if (writable && (!exists || file_size(path) == 0))
            db.exec("PRAGMA journal_mode = WAL");
        ensure_schema(db, writable);
        if (writable) {
            db.exec("PRAGMA journal_mode = WAL");
            db.exec("PRAGMA synchronous = NORMAL");
        }
        const int version = read_schema_version(db);
        result_store store(path, std::move(db), version);
        store.m_immutable = immutable;
        store.m_stamp = stamp;
        if (immutable && file_stamp::of(path) != stamp)
            return open_once(path, mode); // a writer began meanwhile: open through its WAL
        return store;
    } catch (const sqlite_error& e) {
        const int primary = e.code() & 0xff;
        std::string why = e.what();
        if (primary == SQLITE_BUSY || primary == SQLITE_LOCKED)
            throw std::runtime_error(fmt::format("store '{}': {}", shown, e.what()));
        if (primary == SQLITE_NOTADB || primary == SQLITE_CORRUPT)
            why = "the file is not an SQLite database (corrupt or another format)";
        else if (primary == SQLITE_READONLY)
            throw bad_input(read_only_store(shown));
        else if (primary == SQLITE_CANTOPEN || primary == SQLITE_PERM || primary == SQLITE_IOERR)
            why = fmt::format("it cannot be {} ({})", writable ? "created or written" : "read",
                              e.what());
        throw bad_input(fmt::format("store '{}' cannot be used: {}; give --db a writable path to "
                                    "a fourfold store or a new file",
                                    shown, why));
    } catch (const std::runtime_error& e) {
        if (dynamic_cast<const bad_input*>(&e))
            throw;
        throw bad_input(fmt::format("store '{}' cannot be used: {}; give --db a fourfold store "
                                    "or a new file",
                                    shown, e.what()));
    }
}

std::int64_t result_store::begin_run(const std::string& label, const std::string& device,
                                     const std::string& command, const json& provenance) {
    check_label(label);
    transaction tx(m_db);
    auto st = m_db.prepare("INSERT INTO runs(label, started_at, status, device, command, "
                           "provenance) VALUES (?, ?, 'running', ?, ?, ?)");
    st.bind(1, label).bind(2, utc_now_iso8601()).bind(3, device).bind(4, command);
    st.bind(5, provenance.dump());
    st.step();
    const auto id = m_db.last_insert_id();
    tx.commit();
    return id;
}

void result_store::set_provenance(std::int64_t run, const json& provenance) {
    auto st = m_db.prepare("UPDATE runs SET provenance = ? WHERE id = ?");
    st.bind(1, provenance.dump()).bind(2, run).step();
}

void result_store::finish_run(std::int64_t run, std::string_view status) {
    auto st = m_db.prepare("UPDATE runs SET status = ?, finished_at = ? WHERE id = ?");
    st.bind(1, status).bind(2, utc_now_iso8601()).bind(3, run).step();
}

void result_store::reopen_run(std::int64_t run, const json& provenance) {
    transaction tx(m_db);
    auto st = m_db.prepare(
        "UPDATE runs SET status = 'running', finished_at = NULL, provenance = ? WHERE id = ?");
    st.bind(1, provenance.dump()).bind(2, run).step();
    tx.commit();
}

std::set<std::pair<std::string, std::string>> result_store::record_keys(std::int64_t run) const {
    return reading([&] {
        std::set<std::pair<std::string, std::string>> out;
        for (const auto l : k_all_ledgers) {
            auto st = m_db.prepare(fmt::format(
                "SELECT j.key FROM {} r JOIN jobs j ON j.id = r.job_id WHERE r.run_id = ?",
                table_of(l)));
            st.bind(1, run);
            while (st.step())
                out.insert({std::string(to_string(l)), st.text(0)});
        }
        return out;
    });
}

std::int64_t result_store::job_row(std::int64_t run, const job_id& job) {
    const auto key = job.key();
    auto find = m_db.prepare("SELECT id FROM jobs WHERE run_id = ? AND key = ?");
    find.bind(1, run).bind(2, key);
    if (find.step())
        return find.int64(0);
    auto ins = m_db.prepare("INSERT INTO jobs(run_id, key, case_key, workload, variant, device, "
                            "dtype, params, seed) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)");
    ins.bind(1, run).bind(2, key).bind(3, job.case_key()).bind(4, job.workload);
    ins.bind(5, job.variant).bind(6, job.device).bind(7, job.dtype).bind(8, job.params.dump());
    ins.bind(9, static_cast<std::int64_t>(job.seed));
    ins.step();
    return m_db.last_insert_id();
}

std::int64_t result_store::add_record(std::int64_t run, const record& rec) {
    transaction tx(m_db);
    const auto job = job_row(run, rec.job);
    const auto& cols = headline_columns(rec.which);
    std::string names = "run_id, job_id, status, reason, unit, figures, recorded_at";
    std::string marks = "?, ?, ?, ?, ?, ?, ?";
    for (const auto& c : cols) {
        names += fmt::format(", {}", c.name);
        marks += ", ?";
    }
    auto st = m_db.prepare(
        fmt::format("INSERT INTO {}({}) VALUES ({})", table_of(rec.which), names, marks));
    st.bind(1, run).bind(2, job).bind(3, to_string(rec.status));
    if (rec.reason.empty())
        st.bind_null(4);
    else
        st.bind(4, rec.reason);
    st.bind(5, rec.unit).bind(6, rec.figures.dump()).bind(7, utc_now_iso8601());
    int index = 8;
    for (const auto& c : cols)
        bind_headline(st, index++, c, rec.figures);
    st.step();
    const auto id = m_db.last_insert_id();
    if (!rec.samples.empty()) {
        auto s = m_db.prepare(
            "INSERT INTO samples(ledger, record_id, unit, n, data) VALUES (?, ?, ?, ?, ?)");
        const auto bytes = encode_samples(rec.samples);
        s.bind(1, to_string(rec.which)).bind(2, id);
        s.bind(3, rec.samples_unit.empty() ? rec.unit : rec.samples_unit);
        s.bind(4, static_cast<std::int64_t>(rec.samples.size())).bind_blob(5, bytes);
        s.step();
    }
    tx.commit();
    return id;
}

run_row result_store::read_run(const statement& st) const {
    run_row r;
    r.id = st.int64(0);
    r.label = st.text(1);
    r.started_at = st.text(2);
    r.finished_at = st.text(3);
    r.status = st.text(4);
    r.device = st.text(5);
    r.command = st.text(6);
    auto provenance = json::parse(st.text(7), nullptr, false);
    if (provenance.is_discarded() || !provenance.is_object())
        throw bad_input(fmt::format("run {}: its stored provenance is not a JSON object; the "
                                    "store is damaged there (restore it from a copy)",
                                    r.id));
    r.provenance = std::move(provenance);
    return r;
}

std::vector<run_row> result_store::runs() const {
    return reading([&] {
        auto st =
            m_db.prepare("SELECT id, label, started_at, finished_at, status, device, command, "
                         "provenance FROM runs ORDER BY id");
        std::vector<run_row> out;
        while (st.step())
            out.push_back(read_run(st));
        return out;
    });
}

run_row result_store::find_run(const std::string& id_or_label) const {
    return reading([&] {
        std::uint64_t id = 0;
        const bool numeric = parse_uint(id_or_label, id);
        auto st =
            m_db.prepare("SELECT id, label, started_at, finished_at, status, device, command, "
                         "provenance FROM runs WHERE id = ? OR label = ? ORDER BY "
                         "(id = ?) DESC, id DESC LIMIT 1");
        st.bind(1, numeric ? static_cast<std::int64_t>(id) : std::int64_t{-1});
        st.bind(2, id_or_label).bind(3, numeric ? static_cast<std::int64_t>(id) : std::int64_t{-1});
        if (st.step()) {
            auto found = read_run(st);
            if (found.label == id_or_label &&
                !(numeric && found.id == static_cast<std::int64_t>(id)))
                for (const auto& r : runs())
                    if (r.label == found.label && r.id != found.id)
                        found.same_label_runs.push_back(r.id);
            return found;
        }
        std::vector<std::string> known;
        for (const auto& r : runs())
            known.push_back(r.label.empty() ? std::to_string(r.id)
                                            : fmt::format("{} ({})", r.id, r.label));
        throw bad_input(fmt::format("run '{}' is not in store '{}'; runs there: {}", id_or_label,
                                    m_path, known.empty() ? "none" : join(known, ", ")));
    });
}

std::map<std::int64_t, std::int64_t> result_store::record_counts() const {
    return reading([&] {
        std::vector<std::string> parts;
        parts.reserve(k_all_ledgers.size());
        for (const auto l : k_all_ledgers)
            parts.push_back(fmt::format("SELECT run_id FROM {}", table_of(l)));
        auto st = m_db.prepare(fmt::format("SELECT run_id, count(*) FROM ({}) GROUP BY run_id",
                                           join(parts, " UNION ALL ")));
        std::map<std::int64_t, std::int64_t> out;
        while (st.step())
            out[st.int64(0)] = st.int64(1);
        return out;
    });
}

std::vector<stored_record> result_store::records(std::int64_t run, bool with_samples) const {
    return reading([&] {
        std::vector<stored_record> out;
        for (const auto l : k_all_ledgers) {
            auto st = m_db.prepare(fmt::format(
                "SELECT r.id, r.job_id, r.status, r.reason, r.unit, r.figures, r.recorded_at, "
                "j.workload, j.variant, j.device, j.dtype, j.params, j.seed, s.data, s.unit, s.n "
                "FROM {} r JOIN jobs j ON j.id = r.job_id "
                "LEFT JOIN samples s ON s.ledger = ? AND s.record_id = r.id "
                "WHERE r.run_id = ? ORDER BY r.id",
                table_of(l)));
            st.bind(1, to_string(l)).bind(2, run);
            while (st.step()) {
                stored_record s;
                s.id = st.int64(0);
                s.run_id = run;
                s.job_row = st.int64(1);
                s.rec.which = l;
                s.rec.status = parse_record_status(st.text(2)).value_or(record_status::failed);
                s.rec.reason = st.text(3);
                s.rec.unit = st.text(4);
                const auto table = table_of(l);
                s.rec.figures = parse_stored(st.text(5), "figures", run, table, s.id);
                s.recorded_at = st.text(6);
                s.rec.job.workload = st.text(7);
                s.rec.job.variant = st.text(8);
                s.rec.job.device = st.text(9);
                s.rec.job.dtype = st.text(10);
                s.rec.job.params = parse_stored(st.text(11), "params", run, table, s.id);
                s.rec.job.seed = static_cast<std::uint64_t>(st.int64(12));
                if (with_samples && !st.is_null(13)) {
                    const auto bytes = st.blob(13);
                    const auto n = st.int64(15);
                    if (n < 0 || bytes.size() != static_cast<std::size_t>(n) * sizeof(double))
                        throw bad_input(fmt::format("run {}, {} record {}: its stored samples hold "
                                                    "{} bytes where {} values "
                                                    "of 8 bytes were written; the store is damaged "
                                                    "there (restore it from a "
                                                    "copy, or export without --samples)",
                                                    run, table, s.id, bytes.size(), n));
                    s.rec.samples = decode_samples(bytes);
                }
                if (!st.is_null(14) && st.text(14) != s.rec.unit)
                    s.rec.samples_unit = st.text(14);
                out.push_back(std::move(s));
            }
        }
        return out;
    });
}

} // namespace fourfold::store
