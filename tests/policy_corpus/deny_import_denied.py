# expect: deny import-denied
import asyncio
