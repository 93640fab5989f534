// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
package org.nodefl;

/** Counters of a {@link Device} (nodefl_stats); role counters stay 0 for roles the job does not run. */
public final class DeviceStats {
  public final long connections;
  public final long handshakes;
  /** The server resumed the session on the latest connection. */
  public final boolean resumed;
  public final long bytesReceived;
  public final long bytesSent;
  public final long framesIn;
  public final long framesOut;
  public final long sendsResent;
  public final long arenaBytes;
  public final long echoSent;
  public final long echoReceived;
  public final long hctReports;
  public final long histogramReleases;
  public final long walksStarted;
  public final long walksForwarded;
  public final long walksFinished;
  public final long walksDropped;
  public final long compareDone;
  public final long compareAborted;
  public final long trainEpochs;

  /** The order the JNI shim fills them in (nodefl_jni.cc, kStatsFields). */
  static final int FIELDS = 20;

  DeviceStats(long[] v) {
    connections = v[0];
    handshakes = v[1];
    resumed = v[2] != 0;
    bytesReceived = v[3];
    bytesSent = v[4];
    framesIn = v[5];
    framesOut = v[6];
    sendsResent = v[7];
    arenaBytes = v[8];
    echoSent = v[9];
    echoReceived = v[10];
    hctReports = v[11];
    histogramReleases = v[12];
    walksStarted = v[13];
    walksForwarded = v[14];
    walksFinished = v[15];
    walksDropped = v[16];
    compareDone = v[17];
    compareAborted = v[18];
    trainEpochs = v[19];
  }
}
