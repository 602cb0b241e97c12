/**
 * Marks each turn of the event loop in `timeline` ('turn'), by a chain of setImmediate callbacks,
 * until the returned function is called. Work whose awaits all resolve at once (SQLite's
 * statements complete in the call) shows as steps with no 'turn' between them: a request that
 * arrived meanwhile was not read until they were all done.
 */
export function markTurns(timeline: string[]): () => void {
  let running = true;
  const turn = () => {
    if (!running) return;
    timeline.push('turn');
    setImmediate(turn);
  };
  setImmediate(turn);
  return () => {
    running = false;
  };
}
