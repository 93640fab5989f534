// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
package org.nodefl;

/**
 * One graph node's device over the nodefl C API (nodefl.h) through JNI:
 * its TLS client, its session with nodefl-server and the job's roles. The
 * app owns the socket and the clock and moves ciphertext:
 *
 * <pre>
 * try (Device device = Device.create(config)) {
 *   device.connect(nowUs());                   // after every new TCP connection
 *   loop:
 *     byte[] out = device.pendingOutput();     // write it, then
 *     device.consumeOutput(written, nowUs());
 *     int taken = device.receive(buf, off, len, nowUs());  // offer the rest again later
 *     device.tick(nowUs());                    // at least every heartbeat (200 ms is fine)
 *     state CLOSED with nothing pending, or FAILED: close the socket (reconnect: connect() again)
 * }
 * </pre>
 *
 * Times are microseconds on a monotonic clock ({@code System.nanoTime() / 1000}).
 * Every method is synchronized: one thread at a time drives a device (the
 * C API's rule); different devices are independent. Not usable after
 * {@link #close}, which frees the native device.
 */
public final class Device implements AutoCloseable {
  static {
    // libnodefl.so first: older Android linkers do not load a library's
    // dependencies from the app's own folder.
    System.loadLibrary("nodefl");
    System.loadLibrary("nodefl_jni");
  }

  private long handle;

  private Device(long handle) {
    this.handle = handle;
  }

  /** The native library's NODEFL_CAPI_VERSION (MAJOR * 10000 + MINOR * 100 + PATCH). */
  public static int capiVersion() {
    return nativeVersion();
  }

  /** The C API major version these classes were written for. */
  public static final int CAPI_MAJOR = 1;

  /** Creates the device (no I/O); the config is copied. */
  public static Device create(DeviceConfig c) throws NodeflException {
    if (nativeVersion() / 10000 != CAPI_MAJOR) {
      throw new NodeflException(NodeflException.VERSION,
          "libnodefl.so has C API version " + nativeVersion() + ", these classes need major " + CAPI_MAJOR);
    }
    return new Device(nativeCreate(c.deviceId, c.neighbours, c.degree, c.maxNeighbours, c.job, c.fedwalkMode,
        c.vertices, c.features, c.label, c.lumosTrain, c.trainClasses, c.trainHidden, c.trainOut,
        c.budgetJobEpsilon, c.budgetLifetimeEpsilon, c.unlimitedBudget, c.lifetimeEpsilonSpent,
        c.lifetimeDeltaSpent, c.noiseSeed, c.serverName, c.ca, c.cert, c.key, c.handshakeTimeoutMs, c.logLevel));
  }

  /** A new transport connection is up: starts the TLS handshake (a resume after the first). */
  public synchronized void connect(long nowUs) throws NodeflException {
    nativeConnect(live(), nowUs);
  }

  /** Feeds bytes read from the socket; returns how many were taken (offer the rest again after writing). */
  public synchronized int receive(byte[] data, int offset, int length, long nowUs) throws NodeflException {
    if (offset < 0 || length < 0 || offset > data.length - length) {
      throw new IndexOutOfBoundsException("receive: offset " + offset + ", length " + length);
    }
    return nativeReceive(live(), data, offset, length, nowUs);
  }

  /** A copy of the ciphertext to write to the socket (empty when none). */
  public synchronized byte[] pendingOutput() {
    return nativePendingOutput(live());
  }

  /** Copies up to {@code length} pending bytes into {@code buffer} without consuming them; returns the count. */
  public synchronized int copyOutput(byte[] buffer, int offset, int length) {
    if (offset < 0 || length < 0 || offset > buffer.length - length) {
      throw new IndexOutOfBoundsException("copyOutput: offset " + offset + ", length " + length);
    }
    return nativeCopyOutput(live(), buffer, offset, length);
  }

  /** The first {@code count} pending bytes were written to the socket. */
  public synchronized void consumeOutput(int count, long nowUs) throws NodeflException {
    nativeConsumeOutput(live(), count, nowUs);
  }

  /** Timers: handshake deadline, heartbeats, acknowledgements, the roles' progress. */
  public synchronized void tick(long nowUs) throws NodeflException {
    nativeTick(live(), nowUs);
  }

  /** Says Goodbye, then close_notify; write the output, then close the socket. AGAIN: write output and retry. */
  public synchronized void closeSession(String reason) throws NodeflException {
    nativeCloseSession(live(), reason);
  }

  public synchronized DeviceState state() {
    return DeviceState.of(nativeState(live()));
  }

  /** The server ended the session for good: a new connection would not bring it back. */
  public synchronized boolean sessionEnded() {
    return nativeSessionEnded(live());
  }

  /** The configured job has finished on this device. */
  public synchronized boolean finished() {
    return nativeFinished(live());
  }

  public synchronized Ledger ledger() {
    final double[] values = new double[6];
    nativeLedger(live(), values);
    return new Ledger(values);
  }

  public synchronized DeviceStats stats() {
    final long[] values = new long[DeviceStats.FIELDS];
    nativeStats(live(), values);
    return new DeviceStats(values);
  }

  /** The last failure as one line ("" when none). */
  public synchronized String lastError() {
    return nativeLastError(live());
  }

  /** Frees the native device (idempotent). Say Goodbye with {@link #closeSession} first if connected. */
  @Override
  public synchronized void close() {
    if (handle != 0) {
      nativeDestroy(handle);
      handle = 0;
    }
  }

  private long live() {
    if (handle == 0) throw new IllegalStateException("the nodefl device was closed");
    return handle;
  }

  private static native int nativeVersion();

  private static native long nativeCreate(int deviceId, int[] neighbours, int degree, int maxNeighbours, String job,
      String fedwalkMode, int vertices, float[] features, int label, boolean lumosTrain, int trainClasses,
      int trainHidden, int trainOut, double budgetJobEpsilon, double budgetLifetimeEpsilon, boolean unlimitedBudget,
      double lifetimeEpsilonSpent, double lifetimeDeltaSpent, long noiseSeed, String serverName, byte[] ca,
      byte[] cert, byte[] key, int handshakeTimeoutMs, int logLevel) throws NodeflException;

  private static native void nativeDestroy(long handle);

  private static native void nativeConnect(long handle, long nowUs) throws NodeflException;

  private static native int nativeReceive(long handle, byte[] data, int offset, int length, long nowUs)
      throws NodeflException;

  private static native byte[] nativePendingOutput(long handle);

  private static native int nativeCopyOutput(long handle, byte[] buffer, int offset, int length);

  private static native void nativeConsumeOutput(long handle, int count, long nowUs) throws NodeflException;

  private static native void nativeTick(long handle, long nowUs) throws NodeflException;

  private static native void nativeCloseSession(long handle, String reason) throws NodeflException;

  private static native int nativeState(long handle);

  private static native boolean nativeSessionEnded(long handle);

  private static native boolean nativeFinished(long handle);

  private static native void nativeLedger(long handle, double[] out);

  private static native void nativeStats(long handle, long[] out);

  private static native String nativeLastError(long handle);
}
