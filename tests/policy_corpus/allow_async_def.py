# expect: allow
async def fetch_all(items):
    out = []
    async for x in agen(items):
        out.append(x)
    return out

async def agen(items):
    for i in items:
        yield i
print(fetch_all)
