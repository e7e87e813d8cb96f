package sim

import (
	"encoding/binary"
	"fmt"
	"math/bits"
)

// digest is Redis 8.4's DIGEST of a string value: XXH3-64 (seed 0) as 16
// lowercase hex digits.
func digest(value string) string {
	return fmt.Sprintf("%016x", xxh3([]byte(value)))
}

// xxh3Secret is XXH3's default 192-byte secret.
var xxh3Secret = []byte{
	0xb8, 0xfe, 0x6c, 0x39, 0x23, 0xa4, 0x4b, 0xbe, 0x7c, 0x01, 0x81, 0x2c, 0xf7, 0x21, 0xad, 0x1c,
	0xde, 0xd4, 0x6d, 0xe9, 0x83, 0x90, 0x97, 0xdb, 0x72, 0x40, 0xa4, 0xa4, 0xb7, 0xb3, 0x67, 0x1f,
	0xcb, 0x79, 0xe6, 0x4e, 0xcc, 0xc0, 0xe5, 0x78, 0x82, 0x5a, 0xd0, 0x7d, 0xcc, 0xff, 0x72, 0x21,
	0xb8, 0x08, 0x46, 0x74, 0xf7, 0x43, 0x24, 0x8e, 0xe0, 0x35, 0x90, 0xe6, 0x81, 0x3a, 0x26, 0x4c,
	0x3c, 0x28, 0x52, 0xbb, 0x91, 0xc3, 0x00, 0xcb, 0x88, 0xd0, 0x65, 0x8b, 0x1b, 0x53, 0x2e, 0xa3,
	0x71, 0x64, 0x48, 0x97, 0xa2, 0x0d, 0xf9, 0x4e, 0x38, 0x19, 0xef, 0x46, 0xa9, 0xde, 0xac, 0xd8,
	0xa8, 0xfa, 0x76, 0x3f, 0xe3, 0x9c, 0x34, 0x3f, 0xf9, 0xdc, 0xbb, 0xc7, 0xc7, 0x0b, 0x4f, 0x1d,
	0x8a, 0x51, 0xe0, 0x4b, 0xcd, 0xb4, 0x59, 0x31, 0xc8, 0x9f, 0x7e, 0xc9, 0xd9, 0x78, 0x73, 0x64,
	0xea, 0xc5, 0xac, 0x83, 0x34, 0xd3, 0xeb, 0xc3, 0xc5, 0x81, 0xa0, 0xff, 0xfa, 0x13, 0x63, 0xeb,
	0x17, 0x0d, 0xdd, 0x51, 0xb7, 0xf0, 0xda, 0x49, 0xd3, 0x16, 0x55, 0x26, 0x29, 0xd4, 0x68, 0x9e,
	0x2b, 0x16, 0xbe, 0x58, 0x7d, 0x47, 0xa1, 0xfc, 0x8f, 0xf8, 0xb8, 0xd1, 0x7a, 0xd0, 0x31, 0xce,
	0x45, 0xcb, 0x3a, 0x8f, 0x95, 0x16, 0x04, 0x28, 0xaf, 0xd7, 0xfb, 0xca, 0xbb, 0x4b, 0x40, 0x7e,
}

const (
	prime32_1 = 0x9E3779B1
	prime32_2 = 0x85EBCA77
	prime32_3 = 0xC2B2AE3D
	prime64_1 = 0x9E3779B185EBCA87
	prime64_2 = 0xC2B2AE3D27D4EB4F
	prime64_3 = 0x165667B19E3779F9
	prime64_4 = 0x85EBCA77C2B2AE63
	prime64_5 = 0x27D4EB2F165667C5
	primeMX1  = 0x165667919E3779F9
	primeMX2  = 0x9FB21C651E98DF25
)

func le64(b []byte) uint64 { return binary.LittleEndian.Uint64(b) }
func le32(b []byte) uint32 { return binary.LittleEndian.Uint32(b) }

func mulFold64(a, b uint64) uint64 {
	hi, lo := bits.Mul64(a, b)
	return hi ^ lo
}

func xxh64Avalanche(h uint64) uint64 {
	h ^= h >> 33
	h *= prime64_2
	h ^= h >> 29
	h *= prime64_3
	return h ^ h>>32
}

func xxh3Avalanche(h uint64) uint64 {
	h ^= h >> 37
	h *= primeMX1
	return h ^ h>>32
}

func rrmxmx(h uint64, n int) uint64 {
	h ^= bits.RotateLeft64(h, 49) ^ bits.RotateLeft64(h, 24)
	h *= primeMX2
	h ^= (h >> 35) + uint64(n)
	h *= primeMX2
	return h ^ h>>28
}

func mix16(in, sec []byte) uint64 {
	return mulFold64(le64(in)^le64(sec), le64(in[8:])^le64(sec[8:]))
}

// xxh3 is XXH3_64bits with seed 0 and the default secret.
func xxh3(in []byte) uint64 {
	n, s := len(in), xxh3Secret
	switch {
	case n == 0:
		return xxh64Avalanche(le64(s[56:]) ^ le64(s[64:]))
	case n <= 3:
		combined := uint32(in[0])<<16 | uint32(in[n>>1])<<24 | uint32(in[n-1]) | uint32(n)<<8
		return xxh64Avalanche(uint64(combined) ^ uint64(le32(s)^le32(s[4:])))
	case n <= 8:
		input64 := uint64(le32(in[n-4:])) + uint64(le32(in))<<32
		return rrmxmx(input64^(le64(s[8:])^le64(s[16:])), n)
	case n <= 16:
		lo := le64(in) ^ (le64(s[24:]) ^ le64(s[32:]))
		hi := le64(in[n-8:]) ^ (le64(s[40:]) ^ le64(s[48:]))
		return xxh3Avalanche(uint64(n) + bits.ReverseBytes64(lo) + hi + mulFold64(lo, hi))
	case n <= 128:
		return xxh3Upto128(in, s)
	case n <= 240:
		return xxh3Upto240(in, s)
	}
	return xxh3Long(in, s)
}

func xxh3Upto128(in, s []byte) uint64 {
	n := len(in)
	acc := uint64(n) * prime64_1
	if n > 32 {
		if n > 64 {
			if n > 96 {
				acc += mix16(in[48:], s[96:]) + mix16(in[n-64:], s[112:])
			}
			acc += mix16(in[32:], s[64:]) + mix16(in[n-48:], s[80:])
		}
		acc += mix16(in[16:], s[32:]) + mix16(in[n-32:], s[48:])
	}
	acc += mix16(in, s) + mix16(in[n-16:], s[16:])
	return xxh3Avalanche(acc)
}

func xxh3Upto240(in, s []byte) uint64 {
	n := len(in)
	acc := uint64(n) * prime64_1
	for i := range 8 {
		acc += mix16(in[16*i:], s[16*i:])
	}
	acc = xxh3Avalanche(acc)
	for i := 8; i < n/16; i++ {
		acc += mix16(in[16*i:], s[16*(i-8)+3:])
	}
	acc += mix16(in[n-16:], s[136-17:])
	return xxh3Avalanche(acc)
}

func xxh3Long(in, s []byte) uint64 {
	const stripe, perBlock = 64, (192 - 64) / 8
	acc := [8]uint64{prime32_3, prime64_1, prime64_2, prime64_3, prime64_4, prime32_2, prime64_5, prime32_1}
	n, block := len(in), stripe*perBlock
	blocks := (n - 1) / block
	for b := range blocks {
		for i := range perBlock {
			accumulate512(&acc, in[b*block+i*stripe:], s[i*8:])
		}
		for i := range acc {
			a := acc[i]
			a ^= a >> 47
			a ^= le64(s[192-stripe+8*i:])
			acc[i] = a * prime32_1
		}
	}
	last := ((n - 1) - block*blocks) / stripe
	for i := range last {
		accumulate512(&acc, in[blocks*block+i*stripe:], s[i*8:])
	}
	accumulate512(&acc, in[n-stripe:], s[192-stripe-7:])
	result := uint64(n) * prime64_1
	for i := range 4 {
		result += mulFold64(acc[2*i]^le64(s[11+16*i:]), acc[2*i+1]^le64(s[11+16*i+8:]))
	}
	return xxh3Avalanche(result)
}

func accumulate512(acc *[8]uint64, in, sec []byte) {
	for i := range 8 {
		v := le64(in[8*i:])
		k := v ^ le64(sec[8*i:])
		acc[i^1] += v
		acc[i] += uint64(uint32(k)) * (k >> 32)
	}
}
