#include "fourfold/store/sqlite.hpp"

#include "fourfold/core/text.hpp"

#include <cstdlib>
#include <fmt/format.h>
#include <utility>

namespace fourfold::store {
namespace {

bool is_busy(int rc) {
    return (rc & 0xff) == SQLITE_BUSY || (rc & 0xff) == SQLITE_LOCKED;
}

} // namespace

double busy_timeout_s() {
    if (const char* v = std::getenv("FOURFOLD_STORE_BUSY_S")) {
        char* end = nullptr;
        const double s = std::strtod(v, &end);
        if (end != v && *end == '\0' && s >= 0.001 && s <= 3600)
            return s;
    }
    return 30.0;
}

std::string busy_message(std::string_view context) {
    return fmt::format("the store is locked by another process and stayed locked for more than "
                       "{:g} s (the bounded wait; FOURFOLD_STORE_BUSY_S sets it) at {}; nothing "
                       "of this step was written: run again once the other command has finished",
                       busy_timeout_s(), context);
}

database::database(const std::string& path, int flags) {
    const int rc = sqlite3_open_v2(path.c_str(), &m_db, flags, nullptr);
    if (rc != SQLITE_OK) {
        const std::string msg = m_db ? sqlite3_errmsg(m_db) : sqlite3_errstr(rc);
        sqlite3_close(m_db);
        m_db = nullptr;
        throw sqlite_error(rc, msg);
    }
    sqlite3_extended_result_codes(m_db, 1);
    sqlite3_busy_timeout(m_db, static_cast<int>(busy_timeout_s() * 1000));
}

database::~database() {
    sqlite3_close(m_db);
}

database& database::operator=(database&& other) noexcept {
    if (this != &other) {
        sqlite3_close(m_db);
        m_db = std::exchange(other.m_db, nullptr);
    }
    return *this;
}

void database::fail(int code, std::string_view context) const {
    if (is_busy(code))
        throw sqlite_error(code, busy_message(context));
    throw sqlite_error(
        code, fmt::format("{}: {}", context, m_db ? sqlite3_errmsg(m_db) : sqlite3_errstr(code)));
}

void database::exec(std::string_view sql) {
    char* err = nullptr;
    const int rc = sqlite3_exec(m_db, std::string(sql).c_str(), nullptr, nullptr, &err);
    if (rc != SQLITE_OK) {
        const std::string msg = err ? err : sqlite3_errstr(rc);
        sqlite3_free(err);
        if (is_busy(rc))
            throw sqlite_error(rc, busy_message(sql.substr(0, sql.find(' '))));
        throw sqlite_error(rc, msg);
    }
}

statement database::prepare(std::string_view sql) const {
    sqlite3_stmt* stmt = nullptr;
    const int rc =
        sqlite3_prepare_v2(m_db, sql.data(), static_cast<int>(sql.size()), &stmt, nullptr);
    if (rc != SQLITE_OK)
        fail(rc, "prepare");
    return statement(m_db, stmt);
}

statement& statement::bind(int index, std::int64_t value) {
    sqlite3_bind_int64(m_stmt, index, value);
    return *this;
}

statement& statement::bind(int index, double value) {
    sqlite3_bind_double(m_stmt, index, value);
    return *this;
}

statement& statement::bind(int index, std::string_view value) {
    sqlite3_bind_text(m_stmt, index, value.data(), static_cast<int>(value.size()),
                      SQLITE_TRANSIENT);
    return *this;
}

statement& statement::bind(int index, std::optional<double> value) {
    return value ? bind(index, *value) : bind_null(index);
}

statement& statement::bind_null(int index) {
    sqlite3_bind_null(m_stmt, index);
    return *this;
}

statement& statement::bind_blob(int index, std::span<const std::byte> bytes) {
    sqlite3_bind_blob(m_stmt, index, bytes.data(), static_cast<int>(bytes.size()),
                      SQLITE_TRANSIENT);
    return *this;
}

bool statement::step() {
    const int rc = sqlite3_step(m_stmt);
    if (rc == SQLITE_ROW)
        return true;
    if (rc == SQLITE_DONE)
        return false;
    if (is_busy(rc))
        throw sqlite_error(rc, busy_message("a statement"));
    throw sqlite_error(rc, fmt::format("step: {}", sqlite3_errmsg(m_db)));
}

void statement::reset() {
    sqlite3_reset(m_stmt);
    sqlite3_clear_bindings(m_stmt);
}

std::string statement::text(int col) const {
    const auto* p = sqlite3_column_text(m_stmt, col);
    if (!p)
        return {};
    // a store's text is fourfold's own UTF-8, unless the file was damaged or forged: every
    // reader gets valid UTF-8 (found by fuzz_store_bytes: export threw on a 0x90 byte)
    return valid_utf8(
        std::string_view(reinterpret_cast<const char*>(p),
                         static_cast<std::size_t>(sqlite3_column_bytes(m_stmt, col))));
}

std::vector<std::byte> statement::blob(int col) const {
    const auto* p = static_cast<const std::byte*>(sqlite3_column_blob(m_stmt, col));
    const auto n = static_cast<std::size_t>(sqlite3_column_bytes(m_stmt, col));
    return p ? std::vector<std::byte>(p, p + n) : std::vector<std::byte>{};
}

transaction::transaction(database& db) : m_db(db) {
    m_db.exec("BEGIN IMMEDIATE");
}

transaction::~transaction() {
    if (!m_done)
        sqlite3_exec(m_db.get(), "ROLLBACK", nullptr, nullptr, nullptr);
}

void transaction::commit() {
    m_db.exec("COMMIT");
    m_done = true;
}

} // namespace fourfold::store
