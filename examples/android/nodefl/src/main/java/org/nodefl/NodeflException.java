// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
package org.nodefl;

/**
 * A call on a {@link Device} failed: {@link #status()} is the C API's
 * nodefl_status (the constants below), the message its one-line text.
 * Connection failures ({@link #TLS}, {@link #SESSION}, {@link #TIMEOUT}) are
 * routine: write what is still pending, close the socket and reconnect.
 */
public final class NodeflException extends Exception {
  private static final long serialVersionUID = 1L;

  public static final int ARGUMENT = 1;
  public static final int VERSION = 2;
  public static final int CREDENTIALS = 3;
  public static final int NO_MEMORY = 4;
  public static final int STATE = 5;
  /** No room yet: write the pending output, then call again. */
  public static final int AGAIN = 6;
  public static final int TLS = 7;
  public static final int SESSION = 8;
  public static final int TIMEOUT = 9;
  public static final int ROLES = 10;
  public static final int INTERNAL = 11;

  private final int status;

  // Called from the JNI shim (nodefl_jni.cc) with the C API's status and message.
  public NodeflException(int status, String message) {
    super(message);
    this.status = status;
  }

  /** The C API's nodefl_status. */
  public int status() {
    return status;
  }

  /** Whether reconnecting on a new socket can help. */
  public boolean isConnectionFailure() {
    return status == TLS || status == SESSION || status == TIMEOUT;
  }
}
