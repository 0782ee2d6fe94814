// CURVE certificates: the text format both ways, the owner-only check on secret keys, roles, and
// which endpoints count as local.
#include "bus/curve_keys.hpp"

#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include <gtest/gtest.h>

namespace glassbox::bus {
namespace {

namespace fs = std::filesystem;

class CurveKeysTest : public ::testing::Test {
protected:
    void SetUp() override {
        dir_ = fs::temp_directory_path() /
               ("gb-curve-" + std::to_string(::getpid()) + "-" +
                ::testing::UnitTest::GetInstance()->current_test_info()->name());
        fs::remove_all(dir_);
        fs::create_directories(dir_);
    }
    void TearDown() override { fs::remove_all(dir_); }

    fs::path dir_;
};

TEST_F(CurveKeysTest, APairWrittenIsReadBackWithItsRoles) {
    auto roles = parse_roles("client, worker:graph-rag subscriber");
    ASSERT_TRUE(roles.ok()) << roles.error().describe();
    auto made = generate_certificate("host-b", roles.value());
    ASSERT_TRUE(made.ok()) << made.error().describe();
    ASSERT_TRUE(write_certificate_pair(dir_, made.value()).ok());

    auto pub = read_public_certificate(public_certificate_path(dir_, "host-b"));
    ASSERT_TRUE(pub.ok()) << pub.error().describe();
    EXPECT_EQ(pub.value().name, "host-b");
    EXPECT_EQ(pub.value().public_key, made.value().public_key);
    EXPECT_TRUE(pub.value().secret_key.empty()) << "the public certificate carries no secret";
    EXPECT_TRUE(pub.value().roles.client);
    EXPECT_TRUE(pub.value().roles.subscriber);
    EXPECT_FALSE(pub.value().roles.collector);
    EXPECT_TRUE(pub.value().roles.may_serve("graph-rag"));
    EXPECT_FALSE(pub.value().roles.may_serve("trace"));

    auto secret = read_secret_certificate(secret_certificate_path(dir_, "host-b"));
    ASSERT_TRUE(secret.ok()) << secret.error().describe();
    EXPECT_EQ(secret.value().secret_key, made.value().secret_key);

    struct stat info {};
    ASSERT_EQ(::stat(secret_certificate_path(dir_, "host-b").c_str(), &info), 0);
    EXPECT_EQ(info.st_mode & 0777, 0600u);
}

TEST_F(CurveKeysTest, ASecretKeyOthersMayReadIsRefused) {
    auto made = generate_certificate("loose", {});
    ASSERT_TRUE(made.ok());
    ASSERT_TRUE(write_certificate_pair(dir_, made.value()).ok());
    const auto path = secret_certificate_path(dir_, "loose");
    ASSERT_EQ(::chmod(path.c_str(), 0644), 0);
    auto read = read_secret_certificate(path);
    ASSERT_FALSE(read.ok());
    EXPECT_EQ(read.error().type, base::ErrorType::kInvalidRequest);
}

TEST_F(CurveKeysTest, APublicCertificateIsNotASecretOne) {
    auto made = generate_certificate("pub", {});
    ASSERT_TRUE(made.ok());
    ASSERT_TRUE(write_certificate_pair(dir_, made.value()).ok());
    auto read = read_secret_certificate(public_certificate_path(dir_, "pub"));
    ASSERT_FALSE(read.ok());
    EXPECT_NE(read.error().message.find("secret-key"), std::string::npos) << read.error().message;
}

TEST_F(CurveKeysTest, ASecretKeyThatIsNotThePublicKeysIsRefused) {
    auto one = generate_certificate("one", {});
    auto two = generate_certificate("two", {});
    ASSERT_TRUE(one.ok() && two.ok());
    auto mixed = one.value();
    mixed.secret_key = two.value().secret_key;
    ASSERT_TRUE(write_certificate_pair(dir_, mixed).ok());
    auto read = read_secret_certificate(secret_certificate_path(dir_, "one"));
    ASSERT_FALSE(read.ok());
    EXPECT_NE(read.error().message.find("not the secret key's"), std::string::npos);
}

TEST(CurveCertificateText, MalformedTextNamesTheLine) {
    auto bad = parse_certificate("metadata\n    name = \"x\"\ncurve\n    public-key = \"short\"\n",
                                 "f.key");
    ASSERT_FALSE(bad.ok());
    EXPECT_EQ(bad.error().type, base::ErrorType::kDecodeError);
    EXPECT_NE(bad.error().message.find("f.key:4"), std::string::npos) << bad.error().message;

    auto role = parse_certificate("metadata\n    roles = \"client admin\"\n", "g.key");
    ASSERT_FALSE(role.ok());
    EXPECT_NE(role.error().message.find("g.key:2"), std::string::npos) << role.error().message;
    EXPECT_NE(role.error().message.find("admin"), std::string::npos);

    auto empty = parse_certificate("# nothing\n", "h.key");
    ASSERT_FALSE(empty.ok());
    EXPECT_NE(empty.error().message.find("public-key"), std::string::npos);
}

TEST(CurveRoles, WordsAreCheckedAndWrittenInOneOrder) {
    auto roles = parse_roles("worker:* collector client");
    ASSERT_TRUE(roles.ok());
    EXPECT_TRUE(roles.value().may_serve("anything"));
    EXPECT_EQ(roles.value().to_string(), "client collector worker:*");
    EXPECT_FALSE(parse_roles("worker:").ok());
    EXPECT_FALSE(parse_roles("root").ok());
    auto none = parse_roles("");
    ASSERT_TRUE(none.ok());
    EXPECT_FALSE(none.value().client || none.value().subscriber || none.value().collector ||
                 none.value().may_serve("echo"));
}

TEST(CurveKeyText, Z85KeysAreFortyAlphabetCharacters) {
    auto made = generate_certificate("k", {});
    ASSERT_TRUE(made.ok());
    EXPECT_TRUE(is_z85_key(made.value().public_key));
    EXPECT_FALSE(is_z85_key(made.value().public_key.substr(1)));
    EXPECT_FALSE(is_z85_key(std::string(40, '~')));
    auto read = read_server_key(made.value().public_key);
    ASSERT_TRUE(read.ok());
    EXPECT_EQ(read.value(), made.value().public_key);
    EXPECT_FALSE(read_server_key("/no/such/file.key").ok());
}

TEST(LocalEndpoint, OnlyLoopbackAndLocalTransportsAreLocal) {
    EXPECT_TRUE(is_local_endpoint("tcp://127.0.0.1:5555"));
    EXPECT_TRUE(is_local_endpoint("tcp://127.0.0.1:*"));
    EXPECT_TRUE(is_local_endpoint("tcp://127.1.2.3:1"));
    EXPECT_TRUE(is_local_endpoint("tcp://localhost:5555"));
    EXPECT_TRUE(is_local_endpoint("tcp://[::1]:5555"));
    EXPECT_TRUE(is_local_endpoint("ipc:///tmp/gb.sock"));
    EXPECT_TRUE(is_local_endpoint("inproc://x"));
    EXPECT_FALSE(is_local_endpoint("tcp://0.0.0.0:5555"));
    EXPECT_FALSE(is_local_endpoint("tcp://*:5555"));
    EXPECT_FALSE(is_local_endpoint("tcp://10.0.0.1:5555"));
    EXPECT_FALSE(is_local_endpoint("tcp://127.evil.com:5555"));
    EXPECT_FALSE(is_local_endpoint("tcp://[::]:5555"));
    EXPECT_FALSE(is_local_endpoint("tcp://eth0:5555"));
}

}  // namespace
}  // namespace glassbox::bus
