// The self-checking record the concurrency and stress workers write (in
// Python, as the worker scripts are): magic, length, body, sha256(body), so
// any reader can tell a whole record from a torn or mixed one.

enum SelfCheckingRecord {
    /// `random_bytes(n)`, `record(n)` and `whole_record(data)`, for a
    /// script that defines `rng` (a random.Random) and imports hashlib.
    static let python = #"""
def random_bytes(n):
    return rng.getrandbits(8 * n).to_bytes(n, 'little') if n else b''

def record(n):
    """A self-checking record: magic, length, body, sha256(body)."""
    body = random_bytes(n)
    return b'ASFS' + n.to_bytes(8, 'little') + body + hashlib.sha256(body).digest()

def whole_record(data):
    if len(data) < 44 or data[:4] != b'ASFS':
        return False
    n = int.from_bytes(data[4:12], 'little')
    return len(data) == 44 + n and hashlib.sha256(data[12:12 + n]).digest() == data[12 + n:]
"""#
}
