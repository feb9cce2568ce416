// The retry rules of remote reading (retry_policy.hpp), without a server: which statuses are
// transient, Retry-After in both of its forms, and the bounds on attempts and waits, the
// defaults' worst case included. (tests/remote/retry_test.py runs them against faulting servers.)

#include <gtest/gtest.h>

#include <ctime>
#include <optional>

#include "onnxmap/options.hpp"
#include "remote/retry_policy.hpp"

namespace onnxmap::remote {
namespace {

TEST(RetryStatus, OnlyThrottlingAndServerFailuresAreTransient) {
  for (const long status : {429L, 500L, 502L, 503L, 504L}) EXPECT_TRUE(transient_status(status));
  for (const long status : {200L, 206L, 301L, 400L, 401L, 403L, 404L, 416L, 501L, 505L}) {
    EXPECT_FALSE(transient_status(status)) << status;
  }
}

TEST(RetryAfter, DeltaSeconds) {
  EXPECT_EQ(retry_after_seconds("120", 0), 120.0);
  EXPECT_EQ(retry_after_seconds(" 0 ", 0), 0.0);
  EXPECT_GE(*retry_after_seconds("99999999999999999999999", 0), 1e18);  // capped by the policy
  for (const char* bad : {"", "-1", "1.5", "12abc", "soon", "0x10"}) {
    EXPECT_EQ(retry_after_seconds(bad, 0), std::nullopt) << bad;
  }
}

TEST(RetryAfter, HttpDateInEachOfItsThreeForms) {
  // 1994-11-06 08:49:37 UTC, as RFC 9110 writes it in IMF-fixdate, RFC 850 and asctime form.
  constexpr std::time_t kDate = 784111777;
  for (const char* date : {"Sun, 06 Nov 1994 08:49:37 GMT", "Sunday, 06-Nov-94 08:49:37 GMT",
                           "Sun Nov  6 08:49:37 1994"}) {
    EXPECT_EQ(retry_after_seconds(date, kDate - 30), 30.0) << date;
    EXPECT_EQ(retry_after_seconds(date, kDate + 30), 0.0) << date << ": a date already past";
  }
  EXPECT_EQ(retry_after_seconds("Sun, 99 Nov 1994 08:49:37 GMT", kDate), std::nullopt);
}

RemoteOptions retries(unsigned attempts, double base, double max_wait, double total_wait) {
  RemoteOptions options;
  options.retry_attempts = attempts;
  options.retry_base_seconds = base;
  options.retry_max_wait_seconds = max_wait;
  options.retry_total_wait_seconds = total_wait;
  return options;
}

TEST(RetryPolicy, FullJitterUnderADoublingCeiling) {
  const RetryPolicy policy(retries(10, 0.5, 3.0, 100.0));
  EXPECT_EQ(policy.next_wait(1, 0, std::nullopt, 1.0), 0.5);
  EXPECT_EQ(policy.next_wait(2, 0, std::nullopt, 1.0), 1.0);
  EXPECT_EQ(policy.next_wait(3, 0, std::nullopt, 0.5), 1.0);
  EXPECT_EQ(policy.next_wait(3, 0, std::nullopt, 0.0), 0.0);
  EXPECT_EQ(policy.next_wait(4, 0, std::nullopt, 1.0), 3.0);  // 4 s, capped at max_wait
  EXPECT_EQ(policy.next_wait(9, 0, std::nullopt, 1.0), 3.0);
}

TEST(RetryPolicy, RetryAfterIsTakenUpToTheCap) {
  const RetryPolicy policy(retries(5, 0.01, 20.0, 45.0));
  EXPECT_EQ(policy.next_wait(1, 0, 7.0, 0.0), 7.0);
  EXPECT_EQ(policy.next_wait(1, 0, 3600.0, 0.0), 20.0);
  EXPECT_EQ(policy.next_wait(1, 0, 0.0, 1.0), 0.0);
}

TEST(RetryPolicy, AttemptsAndTotalWaitAreBounded) {
  const RetryPolicy policy(retries(3, 1.0, 20.0, 10.0));
  EXPECT_TRUE(policy.next_wait(2, 0, std::nullopt, 0.5));
  EXPECT_EQ(policy.next_wait(3, 0, std::nullopt, 0.5), std::nullopt);  // 3 attempts made
  EXPECT_EQ(policy.next_wait(1, 4.0, 7.0, 0.0), std::nullopt);         // 11 s > 10 s in all
  EXPECT_EQ(policy.next_wait(1, 4.0, 6.0, 0.0), 6.0);
  EXPECT_EQ(RetryPolicy(retries(1, 1.0, 20.0, 45.0)).next_wait(1, 0, std::nullopt, 0.5),
            std::nullopt);
  EXPECT_EQ(RetryPolicy(retries(0, 1.0, 20.0, 45.0)).next_wait(1, 0, std::nullopt, 0.5),
            std::nullopt);  // 0 attempts means 1
}

// The worst case of the defaults, every wait as long as allowed: what docs/remote.md promises
// for a store that always answers 503 (the answers themselves take no time here).
double worst_total_wait(const RetryPolicy& policy, std::optional<double> retry_after,
                        unsigned* attempts) {
  double waited = 0;
  *attempts = 1;
  while (const auto wait = policy.next_wait(*attempts, waited, retry_after, 0.999999)) {
    waited += *wait;
    ++*attempts;
  }
  return waited;
}

TEST(RetryPolicy, DefaultsGiveUpOnAnAlways503StoreWithinAMinute) {
  const RetryPolicy policy{RemoteOptions{}};
  unsigned attempts = 0;
  EXPECT_LE(worst_total_wait(policy, std::nullopt, &attempts), 15.0);
  EXPECT_EQ(attempts, 5U);
  EXPECT_LE(worst_total_wait(policy, 3600.0, &attempts), 45.0);
  EXPECT_EQ(attempts, 3U);  // 20 s + 20 s; a third wait would pass 45 s
  EXPECT_LE(worst_total_wait(policy, 11.0, &attempts), 45.0);
  EXPECT_EQ(attempts, 5U);
}

}  // namespace
}  // namespace onnxmap::remote
