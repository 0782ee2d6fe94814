// libcurl loaded at run time (http/curl_library.hpp): the first file that is libcurl wins, and a
// failure names every file tried and why.
#include "http/curl_library.hpp"

#include <gtest/gtest.h>

namespace glassbox::http {
namespace {

TEST(CurlLibraryTest, LoadsDebiansLibcurlWithEveryFunction) {
    const auto loaded = load_curl_library({"libcurl.so.4"});
    ASSERT_TRUE(loaded) << loaded.error().message;
    const CurlLibrary& lib = *loaded;
    EXPECT_EQ(lib.file, "libcurl.so.4");
    EXPECT_FALSE(lib.version.empty());
    EXPECT_NE(lib.version, "unknown");
    // The functions work, not only resolve: a handle, an option, a date, an error text.
    ASSERT_EQ(lib.global_init(CURL_GLOBAL_DEFAULT), CURLE_OK);
    CURL* handle = lib.easy_init();
    ASSERT_NE(handle, nullptr);
    EXPECT_EQ(lib.easy_setopt(handle, CURLOPT_URL, "http://127.0.0.1:9/"), CURLE_OK);
    EXPECT_EQ(lib.easy_setopt(handle, CURLOPT_TIMEOUT_MS, 100L), CURLE_OK);
    lib.easy_reset(handle);
    lib.easy_cleanup(handle);
    EXPECT_EQ(lib.getdate("Sun, 06 Nov 1994 08:49:37 GMT", nullptr), 784111777);
    EXPECT_STREQ(lib.easy_strerror(CURLE_COULDNT_CONNECT), "Couldn't connect to server");
    curl_slist* list = lib.slist_append(nullptr, "Accept: application/json");
    ASSERT_NE(list, nullptr);
    EXPECT_STREQ(list->data, "Accept: application/json");
    lib.slist_free_all(list);
}

TEST(CurlLibraryTest, SkipsAFileThatIsMissingOrIsNotLibcurl) {
    const auto loaded =
        load_curl_library({"libglassbox-no-such-library.so.4", "libm.so.6", "libcurl.so.4"});
    ASSERT_TRUE(loaded) << loaded.error().message;
    EXPECT_EQ(loaded->file, "libcurl.so.4");
}

TEST(CurlLibraryTest, WhenNoneLoadsTheErrorNamesEachFileAndWhy) {
    const auto loaded = load_curl_library({"libglassbox-no-such-library.so.4", "libm.so.6"});
    ASSERT_FALSE(loaded);
    EXPECT_EQ(loaded.error().type, base::ErrorType::kInternal);
    const std::string& message = loaded.error().message;
    EXPECT_NE(message.find("libcurl could not be loaded"), std::string::npos) << message;
    EXPECT_NE(message.find("libglassbox-no-such-library.so.4"), std::string::npos) << message;
    EXPECT_NE(message.find("libm.so.6: not libcurl (missing curl_version_info"), std::string::npos)
        << message;
}

TEST(CurlLibraryTest, TheProcessWideLibraryIsLoadedOnce) {
    const CurlLibrary& first = curl();
    const CurlLibrary& second = curl();
    EXPECT_EQ(&first, &second);
    EXPECT_FALSE(first.version.empty());
}

}  // namespace
}  // namespace glassbox::http
