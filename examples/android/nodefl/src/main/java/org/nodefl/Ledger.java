// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
package org.nodefl;

/**
 * The device's privacy ledger totals (nodefl_ledger). Persist
 * {@link #lifetimeEpsilon} and {@link #lifetimeDelta} whenever they grow,
 * before writing the output that follows, and pass them back through
 * {@link DeviceConfig.Builder#lifetimeSpent} on the next start.
 */
public final class Ledger {
  /** Summed over every release of this life of the device. */
  public final double epsilon;
  /** The current (or last) job's totals. */
  public final double jobEpsilon;
  public final double jobDelta;
  /** Including earlier lives: persist these. */
  public final double lifetimeEpsilon;
  public final double lifetimeDelta;
  /** Some release of this life had no finite epsilon (a paper mode). */
  public final boolean unbounded;

  Ledger(double[] values) {
    epsilon = values[0];
    jobEpsilon = values[1];
    jobDelta = values[2];
    lifetimeEpsilon = values[3];
    lifetimeDelta = values[4];
    unbounded = values[5] != 0;
  }
}
