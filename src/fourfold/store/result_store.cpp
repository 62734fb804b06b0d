#include "fourfold/store/result_store.hpp"

#include "fourfold/core/error.hpp"
#include "fourfold/core/files.hpp"
#include "fourfold/core/text.hpp"
#include "fourfold/store/schema.hpp"

#include <cstring>
#include <fmt/format.h>

namespace fourfold::store {
namespace {

std::vector<std::byte> encode_samples(const std::vector<double>& values) {
    std::vector<std::byte> out(values.size() * sizeof(double));
    if (!values.empty()) std::memcpy(out.data(), values.data(), out.size());
    return out; // host byte order: little-endian on every platform fourfold targets
}

std::vector<double> decode_samples(const std::vector<std::byte>& bytes) {
    std::vector<double> out(bytes.size() / sizeof(double));
    if (!out.empty()) std::memcpy(out.data(), bytes.data(), out.size() * sizeof(double));
    return out;
}

void bind_headline(statement& st, int index, const headline_column& col, const json& figures) {
    const json::json_pointer ptr{std::string(col.pointer)};
    if (!figures.contains(ptr) || figures.at(ptr).is_null()) {
        st.bind_null(index);
        return;
    }
    const auto& v = figures.at(ptr);
    if (v.is_number_integer()) st.bind(index, v.get<std::int64_t>());
    else if (v.is_number()) st.bind(index, v.get<double>());
    else if (v.is_string()) st.bind(index, v.get<std::string>());
    else if (v.is_boolean()) st.bind(index, std::int64_t{v.get<bool>() ? 1 : 0});
    else st.bind(index, v.dump());
}

} // namespace

json run_row::to_json() const {
    return json{{"id", id},         {"label", label},   {"started_at", started_at},
                {"finished_at", finished_at}, {"status", status}, {"device", device},
                {"command", command}, {"provenance", provenance}};
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
    if (rec.status != record_status::ok) out["reason"] = rec.reason;
    if (with_samples) {
        out["samples"] = rec.samples;
        out["samples_unit"] = rec.samples_unit.empty() ? rec.unit : rec.samples_unit;
    }
    return out;
}

result_store result_store::open(const std::string& path, open_mode mode) {
    const bool writable = mode == open_mode::read_write;
    const std::string& shown = path;
    if (!writable && !path_exists(path))
        throw bad_input(fmt::format("store '{}' does not exist; give --db the path of a store "
                                    "written by 'fourfold run'",
                                    shown));
    if (is_directory(path))
        throw bad_input(fmt::format("store '{}' is a directory; give --db a file path", shown));
    try {
        const int flags = writable ? SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE
                                   : SQLITE_OPEN_READONLY;
        database db(shown, flags);
        db.exec("PRAGMA foreign_keys = ON");
        ensure_schema(db, writable);
        if (writable) {
            db.exec("PRAGMA journal_mode = WAL");
            db.exec("PRAGMA synchronous = NORMAL");
        }
        const int version = read_schema_version(db);
        return result_store(path, std::move(db), version);
    } catch (const sqlite_error& e) {
        const int primary = e.code() & 0xff;
        std::string why = e.what();
        if (primary == SQLITE_NOTADB || primary == SQLITE_CORRUPT)
            why = "the file is not an SQLite database (corrupt or another format)";
        else if (primary == SQLITE_CANTOPEN || primary == SQLITE_READONLY ||
                 primary == SQLITE_PERM || primary == SQLITE_IOERR)
            why = fmt::format("it cannot be {} ({})", writable ? "created or written" : "read",
                              e.what());
        throw bad_input(fmt::format("store '{}' cannot be used: {}; give --db a writable path to "
                                    "a fourfold store or a new file",
                                    shown, why));
    } catch (const std::runtime_error& e) {
        throw bad_input(fmt::format("store '{}' cannot be used: {}; give --db a fourfold store "
                                    "or a new file",
                                    shown, e.what()));
    }
}

std::int64_t result_store::begin_run(const std::string& label, const std::string& device,
                                     const std::string& command, const json& provenance) {
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

std::int64_t result_store::job_row(std::int64_t run, const job_id& job) {
    const auto key = job.key();
    auto find = m_db.prepare("SELECT id FROM jobs WHERE run_id = ? AND key = ?");
    find.bind(1, run).bind(2, key);
    if (find.step()) return find.int64(0);
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
    if (rec.reason.empty()) st.bind_null(4);
    else st.bind(4, rec.reason);
    st.bind(5, rec.unit).bind(6, rec.figures.dump()).bind(7, utc_now_iso8601());
    int index = 8;
    for (const auto& c : cols) bind_headline(st, index++, c, rec.figures);
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
    r.provenance = json::parse(st.text(7), nullptr, false);
    if (r.provenance.is_discarded()) r.provenance = json{{"error", "unreadable provenance"}};
    return r;
}

std::vector<run_row> result_store::runs() const {
    auto st = m_db.prepare("SELECT id, label, started_at, finished_at, status, device, command, "
                           "provenance FROM runs ORDER BY id");
    std::vector<run_row> out;
    while (st.step()) out.push_back(read_run(st));
    return out;
}

run_row result_store::find_run(const std::string& id_or_label) const {
    std::uint64_t id = 0;
    const bool numeric = parse_uint(id_or_label, id);
    auto st = m_db.prepare("SELECT id, label, started_at, finished_at, status, device, command, "
                           "provenance FROM runs WHERE id = ? OR label = ? ORDER BY "
                           "(id = ?) DESC, id DESC LIMIT 1");
    st.bind(1, numeric ? static_cast<std::int64_t>(id) : std::int64_t{-1});
    st.bind(2, id_or_label).bind(3, numeric ? static_cast<std::int64_t>(id) : std::int64_t{-1});
    if (st.step()) {
        auto found = read_run(st);
        if (found.label == id_or_label && !(numeric && found.id == static_cast<std::int64_t>(id)))
            for (const auto& r : runs())
                if (r.label == found.label && r.id != found.id) found.same_label_runs.push_back(r.id);
        return found;
    }
    std::vector<std::string> known;
    for (const auto& r : runs())
        known.push_back(r.label.empty() ? std::to_string(r.id)
                                        : fmt::format("{} ({})", r.id, r.label));
    throw bad_input(fmt::format("run '{}' is not in store '{}'; runs there: {}", id_or_label,
                                m_path, known.empty() ? "none" : join(known, ", ")));
}

std::vector<stored_record> result_store::records(std::int64_t run, bool with_samples) const {
    std::vector<stored_record> out;
    for (const auto l : k_all_ledgers) {
        auto st = m_db.prepare(fmt::format(
            "SELECT r.id, r.job_id, r.status, r.reason, r.unit, r.figures, r.recorded_at, "
            "j.workload, j.variant, j.device, j.dtype, j.params, j.seed, s.data, s.unit "
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
            s.rec.figures = json::parse(st.text(5), nullptr, false);
            s.recorded_at = st.text(6);
            s.rec.job.workload = st.text(7);
            s.rec.job.variant = st.text(8);
            s.rec.job.device = st.text(9);
            s.rec.job.dtype = st.text(10);
            s.rec.job.params = json::parse(st.text(11), nullptr, false);
            s.rec.job.seed = static_cast<std::uint64_t>(st.int64(12));
            if (with_samples && !st.is_null(13)) s.rec.samples = decode_samples(st.blob(13));
            if (!st.is_null(14) && st.text(14) != s.rec.unit) s.rec.samples_unit = st.text(14);
            out.push_back(std::move(s));
        }
    }
    return out;
}

} // namespace fourfold::store
