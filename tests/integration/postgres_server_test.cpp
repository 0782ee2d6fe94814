// The PostgreSQL fixture itself (tests/support/postgres_server.hpp): a real server comes up on a
// loopback port of its own, takes SQL over libpq, keeps its data and port across a stop, and keeps
// committed rows across a crash when durable. The store and trace-store suites build on it.
#include <gtest/gtest.h>

#include <libpq-fe.h>
#include <sys/stat.h>

#include <memory>
#include <optional>
#include <string>

#include "tests/support/postgres_server.hpp"

namespace glassbox::integration {
namespace {

struct Closer {
    void operator()(PGconn* c) const noexcept { PQfinish(c); }
};
using Connection = std::unique_ptr<PGconn, Closer>;

Connection connect(const std::string& dsn) {
    Connection c(PQconnectdb(dsn.c_str()));
    EXPECT_EQ(PQstatus(c.get()), CONNECTION_OK) << PQerrorMessage(c.get());
    return c;
}

// The single value of a one-row, one-column query, or nullopt (with the error in the test log).
std::optional<std::string> value_of(PGconn* c, const std::string& sql) {
    PGresult* r = PQexec(c, sql.c_str());
    std::optional<std::string> out;
    if (PQresultStatus(r) == PGRES_TUPLES_OK && PQntuples(r) == 1 && PQnfields(r) == 1)
        out = PQgetvalue(r, 0, 0);
    else
        ADD_FAILURE() << sql << ": " << PQerrorMessage(c);
    PQclear(r);
    return out;
}

class PostgresServerTest : public ::testing::Test {
protected:
    void SetUp() override {
        if (auto why = PostgresServer::unavailable()) GTEST_SKIP() << *why;
    }
};

TEST_F(PostgresServerTest, ServesSqlOnItsOwnLoopbackPortNotAsRoot) {
    PostgresServer server;
    ASSERT_GT(server.port(), 0);
    server.create_database("fixture");
    server.exec(
        "CREATE TABLE t(id integer PRIMARY KEY, name text NOT NULL);"
        "INSERT INTO t VALUES (1, 'one'), (2, 'two')",
        "fixture");
    auto c = connect(server.dsn("fixture"));
    EXPECT_EQ(value_of(c.get(), "SELECT string_agg(name, ',' ORDER BY id) FROM t"), "one,two");
    EXPECT_EQ(value_of(c.get(), "SELECT inet_server_port()::text"), std::to_string(server.port()));
    EXPECT_EQ(value_of(c.get(), "SELECT current_setting('server_version_num')::int >= 150000"),
              "t");
    // Whoever runs the test, the cluster belongs to a user other than root (the server refuses
    // to run as root, and initdb to create a cluster as root).
    const auto data = value_of(c.get(), "SELECT current_setting('data_directory')");
    ASSERT_TRUE(data);
    struct stat info {};
    ASSERT_EQ(::stat((*data + "/PG_VERSION").c_str(), &info), 0) << *data;
    EXPECT_NE(info.st_uid, 0u);
    EXPECT_THROW(server.exec("SELECT * FROM no_such_table", "fixture"), std::runtime_error);
}

TEST_F(PostgresServerTest, StopAndStartKeepTheDataAndThePort) {
    PostgresServer server;
    server.exec("CREATE TABLE kept(v text); INSERT INTO kept VALUES ('before the stop')");
    const int port = server.port();
    server.stop();
    EXPECT_FALSE(server.running());
    EXPECT_NE(PQping(server.dsn().c_str()), PQPING_OK);
    server.start();
    EXPECT_EQ(server.port(), port);
    auto c = connect(server.dsn());
    EXPECT_EQ(value_of(c.get(), "SELECT v FROM kept"), "before the stop");
}

TEST_F(PostgresServerTest, ADurableServerKeepsCommittedRowsThroughACrash) {
    PostgresServer server(PostgresServer::Options{.durable = true, .settings = {}});
    server.exec("CREATE TABLE rows(n integer); INSERT INTO rows SELECT generate_series(1, 500)");
    server.kill();
    EXPECT_FALSE(server.running());
    server.start();
    auto c = connect(server.dsn());
    EXPECT_EQ(value_of(c.get(), "SELECT count(*)::text FROM rows"), "500");
}

}  // namespace
}  // namespace glassbox::integration
