#pragma once
// Thin RAII over the SQLite C API: one owner per handle, copy deleted, errors as exceptions.
#include <cstdint>
#include <optional>
#include <span>
#include <sqlite3.h>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace fourfold::store {

class sqlite_error : public std::runtime_error {
  public:
    sqlite_error(int code, const std::string& what) : std::runtime_error(what), m_code(code) {}
    int code() const { return m_code; }

  private:
    int m_code;
};

// How long a connection waits for a lock another process holds (SQLite's busy timeout) before
// it gives up with store_busy: FOURFOLD_STORE_BUSY_S seconds (0.001..3600), 30 by default.
double busy_timeout_s();

// The wait for another process's lock on the store ran out: one line that says so.
std::string busy_message(std::string_view context);

class statement;

class database {
  public:
    database(const std::string& path, int flags);
    ~database();
    database(const database&) = delete;
    database& operator=(const database&) = delete;
    database(database&& other) noexcept : m_db(std::exchange(other.m_db, nullptr)) {}
    database& operator=(database&& other) noexcept;

    void exec(std::string_view sql);
    statement prepare(std::string_view sql) const;
    std::int64_t last_insert_id() const { return sqlite3_last_insert_rowid(m_db); }
    sqlite3* get() const { return m_db; }
    [[noreturn]] void fail(int code, std::string_view context) const;

  private:
    sqlite3* m_db = nullptr;
};

class statement {
  public:
    statement(sqlite3* db, sqlite3_stmt* stmt) : m_db(db), m_stmt(stmt) {}
    ~statement() { sqlite3_finalize(m_stmt); }
    statement(const statement&) = delete;
    statement& operator=(const statement&) = delete;
    statement(statement&& other) noexcept
        : m_db(other.m_db), m_stmt(std::exchange(other.m_stmt, nullptr)) {}

    statement& bind(int index, std::int64_t value);
    statement& bind(int index, double value);
    statement& bind(int index, std::string_view value);
    statement& bind(int index, const char* value) { return bind(index, std::string_view(value)); }
    statement& bind(int index, std::optional<double> value);
    statement& bind_null(int index);
    statement& bind_blob(int index, std::span<const std::byte> bytes);

    // true while a row is available
    bool step();
    void reset();

    bool is_null(int col) const { return sqlite3_column_type(m_stmt, col) == SQLITE_NULL; }
    std::int64_t int64(int col) const { return sqlite3_column_int64(m_stmt, col); }
    double real(int col) const { return sqlite3_column_double(m_stmt, col); }
    std::string text(int col) const;
    std::vector<std::byte> blob(int col) const;

  private:
    sqlite3* m_db;
    sqlite3_stmt* m_stmt;
};

// BEGIN IMMEDIATE ... COMMIT, rolled back when left by an exception.
class transaction {
  public:
    explicit transaction(database& db);
    ~transaction();
    transaction(const transaction&) = delete;
    transaction& operator=(const transaction&) = delete;
    void commit();

  private:
    database& m_db;
    bool m_done = false;
};

} // namespace fourfold::store
