// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
package org.nodefl;

/** The current connection's state (nodefl_state, in the same order). */
public enum DeviceState {
  /** Created; {@link Device#connect} starts a connection. */
  IDLE,
  /** TLS handshake in progress. */
  HANDSHAKING,
  /** Session started: frames flow. */
  OPEN,
  /** Goodbye on its way, then close_notify. */
  CLOSING,
  /** Closed cleanly, by the device or the server. */
  CLOSED,
  /** The connection failed: {@link Device#lastError} says why. */
  FAILED;

  static DeviceState of(int value) {
    final DeviceState[] all = values();
    return value >= 0 && value < all.length ? all[value] : FAILED;
  }
}
