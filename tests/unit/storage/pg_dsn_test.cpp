// PostgreSQL connection strings as glassbox shows them: never a password, whatever the form.
#include "storage/pg_dsn.hpp"

#include <gtest/gtest.h>

#include <string>

namespace glassbox::storage {
namespace {

void expect_no_secret(const std::string& shown) {
    EXPECT_EQ(shown.find("s3cret"), std::string::npos) << shown;
}

TEST(PgDsnTest, AKeywordPasswordIsMaskedQuotedOrNot) {
    auto shown = masked_dsn("host=db1 port=6432 user=gb password=s3cret dbname=glassbox");
    expect_no_secret(shown);
    EXPECT_NE(shown.find("password=***"), std::string::npos) << shown;
    EXPECT_NE(shown.find("host=db1"), std::string::npos) << shown;
    EXPECT_NE(shown.find("dbname=glassbox"), std::string::npos) << shown;
    shown = masked_dsn("host=db1 password='two s3cret words' dbname='my db'");
    expect_no_secret(shown);
    EXPECT_EQ(shown.find("words"), std::string::npos) << shown;
    EXPECT_NE(shown.find("dbname='my db'"), std::string::npos) << shown;
}

TEST(PgDsnTest, AUriPasswordIsMaskedInTheUserInfoAndTheQuery) {
    auto shown = masked_dsn("postgresql://gb:s3cret@db1:6432/glassbox?sslmode=require");
    expect_no_secret(shown);
    EXPECT_NE(shown.find("password=***"), std::string::npos) << shown;
    EXPECT_NE(shown.find("sslmode=require"), std::string::npos) << shown;
    shown = masked_dsn("postgres://db1/glassbox?user=gb&password=s3cret");
    expect_no_secret(shown);
    EXPECT_NE(shown.find("password=***"), std::string::npos) << shown;
}

TEST(PgDsnTest, WithoutAPasswordTheStringIsShownAsWritten) {
    EXPECT_EQ(masked_dsn("postgresql://gb@db1:6432/glassbox"), "postgresql://gb@db1:6432/glassbox");
    EXPECT_EQ(masked_dsn("host=127.0.0.1 port=5433 dbname=traces"),
              "host=127.0.0.1 port=5433 dbname=traces");
}

TEST(PgDsnTest, AStringLibpqCannotReadIsHiddenWhenItMayHoldAPassword) {
    EXPECT_EQ(masked_dsn("host=db1 password='s3cret"), "(a connection string)");  // open quote
    EXPECT_EQ(masked_dsn("host=db1 PASSWORD s3cret"), "(a connection string)");
    EXPECT_EQ(masked_dsn("host=db1 nonsense"), "host=db1 nonsense");
}

TEST(PgDsnTest, TheServerIsNamedByHostAndPort) {
    EXPECT_EQ(dsn_server("host=db1 port=6432 password=s3cret"), "db1:6432");
    EXPECT_EQ(dsn_server("postgresql://gb:s3cret@db2/glassbox"), "db2:5432");
    EXPECT_EQ(dsn_server("hostaddr=10.0.0.7 dbname=x"), "10.0.0.7:5432");
    EXPECT_EQ(dsn_server("dbname=x"), "local socket:5432");
    EXPECT_EQ(dsn_server("host=db1 password='s3cret"), "(unreadable connection string)");
}

}  // namespace
}  // namespace glassbox::storage
