# expect: allow
import sys

def main() -> int:
    print("hello")
    return 0

if __name__ == "__main__":
    sys.exit(main())
