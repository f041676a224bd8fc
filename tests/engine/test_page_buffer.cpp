// test_page_buffer.cpp — PageBuffer (memory/page_buffer.h): zero-filled page mappings, the
// huge-page variant's 2 MiB start, discard() returning the pages and
// leaving the range reserved but unreadable, and ownership on move.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdint>
#include <fstream>
#include <sstream>
#include <string>
#include <utility>

#include "memory/page_buffer.h"

namespace llmwb {
namespace {

struct Mapping {
  uintptr_t start = 0, end = 0;
  std::string perms;
};

// The /proc/self/maps entry that contains p (empty perms when none does).
Mapping mapping_of(const void* p) {
  const auto a = reinterpret_cast<uintptr_t>(p);
  std::ifstream maps("/proc/self/maps");
  std::string line;
  while (std::getline(maps, line)) {
    std::istringstream ls(line);
    std::string range, perms;
    ls >> range >> perms;
    const size_t dash = range.find('-');
    const uintptr_t s = std::stoull(range.substr(0, dash), nullptr, 16);
    const uintptr_t e = std::stoull(range.substr(dash + 1), nullptr, 16);
    if (a >= s && a < e) return {s, e, perms};
  }
  return {};
}

const uintptr_t kPage = static_cast<uintptr_t>(sysconf(_SC_PAGESIZE));

TEST(PageBuffer, IsZeroFilledWritableAndPageAligned) {
  PageBuffer b(10000);
  ASSERT_NE(b.data(), nullptr);
  EXPECT_EQ(b.size(), 10000u);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(b.data()) % kPage, 0u);
  for (uint64_t i = 0; i < b.size(); ++i) ASSERT_EQ(b.data()[i], 0) << i;
  for (uint64_t i = 0; i < b.size(); ++i) b.data()[i] = static_cast<uint8_t>(i * 7);
  for (uint64_t i = 0; i < b.size(); ++i) ASSERT_EQ(b.data()[i], static_cast<uint8_t>(i * 7));
  EXPECT_EQ(mapping_of(b.data()).perms.substr(0, 2), "rw");
  EXPECT_EQ(PageBuffer(0).data(), nullptr);
}

TEST(PageBuffer, HugePagesStartOnA2MiBBoundary) {
  const uint64_t n = (uint64_t{5} << 20) + 123;   // 5 MiB and a bit: the tail stays small pages
  PageBuffer b(n, /*huge_pages=*/true);
  ASSERT_NE(b.data(), nullptr);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(b.data()) % (uintptr_t{2} << 20), 0u);
  EXPECT_EQ(mapping_of(b.data() + n - 1).perms.substr(0, 2), "rw");
  b.data()[0] = 1;
  b.data()[n - 1] = 2;
  EXPECT_EQ(b.data()[1], 0);
  EXPECT_EQ(b.data()[n - 1], 2);
}

TEST(PageBuffer, DiscardReturnsThePagesAndLeavesTheRangeReservedButUnreadable) {
  PageBuffer b(3 * kPage + 5);
  b.data()[0] = 9;
  b.data()[3 * kPage + 4] = 9;
  const uint8_t* p = b.data();
  EXPECT_FALSE(b.discarded());
  b.discard();
  EXPECT_TRUE(b.discarded());
  EXPECT_EQ(b.data(), p);   // the address stays: views keep unique keys
  const Mapping m = mapping_of(p);
  EXPECT_EQ(m.perms.substr(0, 3), "---");
  EXPECT_GE(m.end, reinterpret_cast<uintptr_t>(p) + 4 * kPage);
  b.discard();   // twice is harmless
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_DEATH({ [[maybe_unused]] volatile uint8_t v = *static_cast<const volatile uint8_t*>(p); }, "");
}

TEST(PageBuffer, MovingTransfersTheMapping) {
  PageBuffer a(kPage);
  a.data()[5] = 42;
  uint8_t* p = a.data();
  PageBuffer b(std::move(a));
  EXPECT_EQ(a.data(), nullptr);
  EXPECT_EQ(a.size(), 0u);
  EXPECT_EQ(b.data(), p);
  EXPECT_EQ(b.data()[5], 42);
  PageBuffer c(2 * kPage);
  c = std::move(b);   // c's own mapping is unmapped, b's moves in
  EXPECT_EQ(c.data(), p);
  EXPECT_EQ(c.size(), kPage);
  EXPECT_EQ(b.data(), nullptr);
}

}  // namespace
}  // namespace llmwb
