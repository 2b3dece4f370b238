/*
 * A stand-in for bcryptprimitives.dll under Wine, built by .ci/run only when the
 * installed Wine lacks that DLL.
 *
 * Rust's standard library for Windows draws its random bytes (HashMap seeds among
 * them) from ProcessPrng, which bcryptprimitives.dll exports on Windows 10 and
 * later. Debian 12's Wine 8 has no such DLL, so every Rust executable fails to load
 * there before main. This DLL exports ProcessPrng and answers it with
 * SystemFunction036 (RtlGenRandom) from advapi32, which Wine has; it is placed
 * beside the executables that run under Wine and is never shipped.
 */
#include <windows.h>

/* advapi32's RtlGenRandom, exported under this name; no header declares it. */
BOOLEAN WINAPI SystemFunction036(PVOID buffer, ULONG length);

/* Fills len bytes at data; always TRUE, as on Windows, where it cannot fail. */
__declspec(dllexport) BOOL WINAPI ProcessPrng(PBYTE data, SIZE_T len)
{
    /* RtlGenRandom takes a 32-bit length: ask in pieces that fit. */
    while (len > 0) {
        ULONG piece = len > 0x40000000 ? 0x40000000 : (ULONG)len;
        if (!SystemFunction036(data, piece)) {
            /* Nothing random to give, and no way to say so: stop the process
               rather than hand out predictable bytes. */
            ExitProcess(1);
        }
        data += piece;
        len -= piece;
    }
    return TRUE;
}
