// base::mask_credentials: the passwords a quoted value may hold, masked before it is echoed.
#include <gtest/gtest.h>

#include "base/credentials.hpp"

namespace glassbox::base {
namespace {

TEST(MaskCredentials, MasksTheUserInfoPasswordOfAUri) {
    EXPECT_EQ(mask_credentials("got \"postgresql://u:s3cret@db1:5432/glassbox\""),
              "got \"postgresql://u:***@db1:5432/glassbox\"");
    // A password holding ':' and '@' (the last '@' ends the user info).
    EXPECT_EQ(mask_credentials("postgres://me:a:b@c@h/db?sslmode=require"),
              "postgres://me:***@h/db?sslmode=require");
    EXPECT_EQ(mask_credentials("a https://x:1@h and https://y:2@g/p"),
              "a https://x:***@h and https://y:***@g/p");
}

TEST(MaskCredentials, MasksPasswordKeywordsInAnyCaseQuotedOrNot) {
    EXPECT_EQ(mask_credentials("host=db1 user=u password=s3cret dbname=g"),
              "host=db1 user=u password=*** dbname=g");
    EXPECT_EQ(mask_credentials("host=db1 PASSWORD = 'it\\'s x' dbname=g"),
              "host=db1 PASSWORD = *** dbname=g");
    EXPECT_EQ(mask_credentials("postgresql://h/db?user=u&password=s3cret&sslmode=require"),
              "postgresql://h/db?user=u&password=***&sslmode=require");
}

TEST(MaskCredentials, LeavesTextWithoutPasswordsAsItIs) {
    for (const char* text :
         {"", "expected one of \"sqlite\", \"postgres\", got \"mysql\"", "https://host/path",
          "user@example.com", "password", "password=", "the password is long", "http://h:8080/x"}) {
        EXPECT_EQ(mask_credentials(text), text);
    }
}

}  // namespace
}  // namespace glassbox::base
